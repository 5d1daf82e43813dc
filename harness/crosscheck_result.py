"""The cross-check's result: each client's figures per round, the ratios between them, the stored
``crosscheck/crosscheck.json`` and the table ``harness crosscheck`` prints.

Running the two clients is ``harness.crosscheck``'s; this module owns what a run hands back and how it is kept and
shown, so the report reads the last cross-check (``read_crosscheck``) without the machinery that ran it. Ratios are
ours / the peer's of each figure's median over rounds (the peer: vLLM's client unless ``--client`` names another,
``harness.crosscheck_peers``); the anchored ratios divide out the server's drift first (each client against the
server's own histograms over its runs). A cross-check against vLLM's client is kept as ``crosscheck.json``, the one
the report reads; one against another peer as ``crosscheck-<name>.json`` beside it.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.config import RandomWorkload
from harness.servers.prometheus import ServerMetricNames
from harness.store import Store, write_atomic

PEERS_DIR = Path(__file__).resolve().parents[1] / "build" / "peers"
"""Where ``make peers`` installs each peer client, one environment per peer (``scripts/install-peers.sh``)."""
FIGURES = ("median_ttft_ms", "median_tpot_ms", "mean_itl_ms", "output_throughput")
ANCHORED = ("mean_itl_ms", "mean_tpot_ms", "mean_ttft_ms")
DEFINITIONAL_NOTES = (
    "vLLM's client sends random prompts as text its tokenizer re-aligns; ours sends token ids (completions): the "
    "server tokenizes vLLM's prompts, a fraction of a millisecond of TTFT.",
    "vLLM's duration starts before its first request is dispatched; ours at the first send (throughput).",
    "vLLM's client counts every chunk with a choice as a token arrival; ours only chunks that carry tokens (the "
    "same on a vLLM server, where every such chunk carries at least one).",
    "Ours asks for continuous_usage_stats (a usage block on every chunk, a few bytes more per chunk).",
    "vLLM's client stamps a chunk after its aiohttp coroutine loop has read and parsed it; ours takes the "
    "kernel's receive timestamp of the bytes (SO_TIMESTAMPNS). Whenever the client process waits for a core (on "
    "a 2-core machine the server's engine busy-polls one of them) vLLM's stamps come later by that wait, ours do "
    "not: its TTFT reads higher. tools/client_bench measures both stamps against the server's send time "
    "(p99 at 64 streams: ours 0.04 ms, vLLM's 15-23 ms on a loaded 2-core machine).",
    "vLLM's ready check and warm-ups send its first measured prompt beforehand (that prompt is then served from "
    "the prefix cache); the cross-check turns both off and warms the server up with one run of ours.",
)


@dataclass(frozen=True, slots=True)
class CrosscheckSpec:
    base_url: str
    model: str
    """The served model name."""
    tokenizer_dir: Path
    """The model's tokenizer (ours reads tokenizer.json; vLLM's client loads it with transformers)."""
    workload: RandomWorkload
    concurrency: int
    rounds: int = 3
    request_timeout_s: float = 300.0
    vllm_python: str = sys.executable
    server_metrics: ServerMetricNames | None = None
    """Where the server keeps its own histograms (from its adapter); None: no anchoring to the server's view."""
    client: str = "vllm"
    """The peer client beside ours (``harness.crosscheck_peers``)."""
    peers_dir: Path = PEERS_DIR
    """Where the peers' own environments are (``build/peers/<name>/``)."""


@dataclass(frozen=True, slots=True)
class ClientFigures:
    client: str
    round: int
    median_ttft_ms: float
    median_tpot_ms: float
    mean_itl_ms: float
    output_throughput: float
    completed: int
    failed: int
    mean_ttft_ms: float = float("nan")
    server_mean_ttft_ms: float | None = None
    """The server's own mean over the same run (its TTFT histogram's sum / count); None when it exposes none."""
    server_mean_itl_ms: float | None = None
    mean_tpot_ms: float = float("nan")
    """The mean over requests of each one's TPOT (NaN for a peer whose result file gives none)."""
    server_mean_tpot_ms: float | None = None
    """The server's mean of its per-request TPOT histogram over the same run."""

    def anchored(self, figure: str) -> float | None:
        """This client's mean TTFT, TPOT or ITL over the server's own mean of the same run."""
        client, server = {"mean_ttft_ms": (self.mean_ttft_ms, self.server_mean_ttft_ms),
                          "mean_tpot_ms": (self.mean_tpot_ms, self.server_mean_tpot_ms),
                          "mean_itl_ms": (self.mean_itl_ms, self.server_mean_itl_ms)}[figure]
        return client / server if server and not math.isnan(client) else None


@dataclass(frozen=True, slots=True)
class CrosscheckResult:
    spec: CrosscheckSpec
    rounds: tuple[ClientFigures, ...]
    title: str = "vLLM"
    """How the table names the peer."""
    notes: tuple[str, ...] = DEFINITIONAL_NOTES
    """Where the peer's figures are defined or obtained differently from ours (its entry's ``notes``)."""

    def median(self, client: str, figure: str) -> float:
        return float(statistics.median(getattr(r, figure) for r in self.rounds if r.client == client))

    def ratios(self) -> dict[str, float]:
        """Ours / the peer's, of each figure's median over rounds."""
        return {figure: self.median("ours", figure) / self.median(self.spec.client, figure) for figure in FIGURES}

    def within(self, tolerance: float) -> bool:
        return all(abs(ratio - 1.0) <= tolerance for ratio in self.ratios().values())

    def anchors(self, client: str) -> dict[str, float]:
        """Median over rounds of the client's mean / the server's mean, per anchored figure that has one."""
        out = {}
        for figure in ANCHORED:
            values = [a for r in self.rounds if r.client == client and (a := r.anchored(figure)) is not None]
            if values:
                out[figure] = float(statistics.median(values))
        return out

    def anchored_ratios(self) -> dict[str, float]:
        """Ours / the peer's of the anchors: each client against the server's view of its own runs."""
        ours, theirs = self.anchors("ours"), self.anchors(self.spec.client)
        return {figure: ours[figure] / theirs[figure] for figure in ANCHORED if figure in ours and figure in theirs}

    def to_json(self) -> str:
        spec = {**asdict(self.spec), "tokenizer_dir": str(self.spec.tokenizer_dir),
                "peers_dir": str(self.spec.peers_dir), "workload": self.spec.workload.model_dump(mode="json")}
        return json.dumps({"spec": spec, "rounds": [asdict(r) for r in self.rounds], "ratios": self.ratios(),
                           "anchored_ratios": self.anchored_ratios(),
                           "anchors": {c: self.anchors(c) for c in ("ours", self.spec.client)},
                           "notes": self.notes},
                          indent=2)


def crosscheck_file(store: Store, client: str) -> Path:
    """Where a cross-check against ``client`` is kept: vLLM's keeps the name the report reads."""
    return store.crosscheck_path if client == "vllm" else store.crosscheck_dir / f"crosscheck-{client}.json"


def write_crosscheck(result: CrosscheckResult, store: Store) -> Path:
    """The cross-check's figures as ``crosscheck/crosscheck[-<peer>].json`` beside the matrix's results."""
    path = crosscheck_file(store, result.spec.client)
    write_atomic(path, result.to_json())
    return path


def read_crosscheck(store: Store) -> dict[str, Any] | None:
    """The last stored cross-check of the matrix (as ``write_crosscheck`` wrote it), or None."""
    try:
        return dict(json.loads(store.crosscheck_path.read_text()))
    except (OSError, ValueError):
        return None


def format_result(result: CrosscheckResult, tolerance: float) -> str:
    spec = result.spec
    lines = [f"crosscheck: {spec.workload.label} at concurrency {spec.concurrency}, "
             f"{spec.workload.requests_for(spec.concurrency)} requests per run, {spec.rounds} rounds interleaved, "
             f"against {spec.base_url}",
             f"{'round':>5}  {'client':<14} {'TTFT med ms':>12} {'TPOT med ms':>12} {'ITL mean ms':>12} "
             f"{'out tok/s':>10} {'ok/failed':>10}"]
    for r in result.rounds:
        lines.append(f"{r.round:>5}  {r.client:<14} {r.median_ttft_ms:>12.2f} {r.median_tpot_ms:>12.3f} "
                     f"{r.mean_itl_ms:>12.3f} {r.output_throughput:>10.1f} {f'{r.completed}/{r.failed}':>10}")
    ratios = result.ratios()
    verdict = "all within" if result.within(tolerance) else "NOT all within"
    names = ("TTFT", "TPOT", "ITL", "throughput")
    shown = ", ".join(f"{name} {ratio:.3f}" for name, ratio in zip(names, ratios.values(), strict=True))
    lines.append(f"ratio ours/{result.title} (medians over rounds): {shown}: {verdict} 1.00 ± {tolerance:.2f}")
    if anchored := result.anchored_ratios():
        per_client = "; ".join(
            f"{client} " + ", ".join(f"{_SHORT[f]} {v:.3f}" for f, v in result.anchors(client).items())
            for client in ("ours", spec.client))
        shown = ", ".join(f"{_SHORT[f]} {v:.3f}" for f, v in anchored.items())
        verdict = "within" if all(abs(v - 1.0) <= tolerance for v in anchored.values()) else "NOT within"
        lines.append(f"each client / the server's own histograms over its runs (median over rounds): {per_client}")
        lines.append(f"ratio ours/{result.title} of those, the server's drift divided out: {shown}: {verdict} "
                     f"1.00 ± {tolerance:.2f}")
    lines += ["definitional differences:", *(f"  - {note}" for note in result.notes)]
    return "\n".join(lines)


_SHORT = {"mean_itl_ms": "ITL", "mean_tpot_ms": "TPOT", "mean_ttft_ms": "TTFT"}
