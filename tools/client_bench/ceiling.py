"""The ceiling per CPU-second (issue 67, item 4): every client's streamed-token rate against the loopback streamer,
and the CPU it burned for it, counted the same way for each.

Each run is one client in a process of its own, started under ``tools.phase_clock`` (a child subreaper): the CPU
counted is that of the client's process and every process it started, however deep, reaped or orphaned, from its
start to its end; imports, tokenizer loading, worker processes and prompt synthesis included. So each load run has
a *startup* run beside it: the same client at the same concurrency, with as many requests, of one output token
each (a peer that starts a worker process per slot or per core starts as many): what the run costs before its load,
subtracted for the net rate. Ours runs the same way, as a worker process (``workers.worker``); a peer runs its
adapter's argv (``harness.crosscheck_peers``) pointed at the loopback server, and its own result file gives its
rate. Clients are interleaved in round-robin order within each concurrency, so drift in the machine hits each
alike.

Output tokens are counted as completed requests x the tokens asked for: the loopback server streams exactly
``max_tokens`` and every workload here has a range ratio of 0.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from harness.config import RandomWorkload
from harness.crosscheck_peers import PEER_CLIENTS, PeerNotInstalled, peer_client
from harness.crosscheck_result import PEERS_DIR, ClientFigures, CrosscheckSpec
from tools.client_bench.workers import INPUT_TOKENS, ROOT, figures_of, worker_argv
from tools.phase_clock import read_records

RUN_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class Counted:
    """One command run to its end: its exit code, its output, its wall and the CPU seconds of it and every process
    it started; ``left_running``: processes still alive when it ended (their CPU is missing)."""

    rc: int
    output: str
    wall_s: float
    cpu_s: float
    left_running: int


def run_counted(argv: Sequence[str], *, timeout_s: float = RUN_TIMEOUT_S) -> Counted:
    """Run ``argv`` under ``tools.phase_clock`` and read back its record: ``RUSAGE_CHILDREN`` of a subreaper, so a
    peer's worker processes count even when orphaned. The clock's own interpreter is outside the count."""
    with tempfile.TemporaryDirectory(prefix="client-bench-") as tmp:
        log = Path(tmp) / "phase.jsonl"
        proc = subprocess.run([sys.executable, "-m", "tools.phase_clock", "run", "client", "--log", str(log),
                               "--parent", str(os.getpid()), "--", *argv],
                              capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
        records = read_records(log)
        if not records:
            raise RuntimeError(f"the phase clock wrote no record ({proc.returncode}):\n{proc.stderr[-2000:]}")
        record = records[-1]
        return Counted(record.rc, proc.stdout + proc.stderr, record.wall_s, record.cpu_s, record.left_running)


def round_order(clients: Sequence[str], round_: int) -> list[str]:
    """Round-robin: each round starts one client later, so over ``len(clients)`` rounds each runs in every slot."""
    shift = round_ % len(clients) if clients else 0
    return [*clients[shift:], *clients[:shift]]


class LoadClient(Protocol):
    """What the ceiling needs of a client: ``PeerClient``'s argv builder and result parser (ours has both too)."""

    name: ClassVar[str]
    title: ClassVar[str]
    result_file: ClassVar[str]

    def check_installed(self, peers_dir: Path) -> None: ...

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]: ...

    def figures(self, result: Path, round_: int) -> ClientFigures: ...


class OurClient:
    """Our client as a worker process, with a peer's interface (argv for a spec, figures from its result file)."""

    name: ClassVar[str] = "ours"
    title: ClassVar[str] = "ours"
    result_file: ClassVar[str] = "result.json"

    def check_installed(self, peers_dir: Path) -> None:
        """Always there: it is the harness's own."""

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        w = spec.workload
        return worker_argv("ours", spec.base_url, spec.tokenizer_dir, spec.concurrency,
                           w.requests_for(spec.concurrency), w.output_tokens, result_file=run_dir / self.result_file)

    def figures(self, result: Path, round_: int) -> ClientFigures:
        f = figures_of(json.loads(result.read_text()))
        nan = float("nan")
        return ClientFigures(client=self.name, round=round_, median_ttft_ms=nan, median_tpot_ms=nan, mean_itl_ms=nan,
                             output_throughput=f["tok_s"], completed=f["completed"], failed=f["failed"])


def load_client(name: str) -> LoadClient:
    return OurClient() if name == OurClient.name else peer_client(name)


def known_clients() -> tuple[str, ...]:
    """Ours first, then every peer of the registry."""
    return (OurClient.name, *PEER_CLIENTS.names())


def installed(names: Sequence[str], peers_dir: Path = PEERS_DIR) -> list[str]:
    """The clients among ``names`` that can run here; a line is printed for each skipped one."""
    ready = []
    for name in names:
        try:
            load_client(name).check_installed(peers_dir)
        except PeerNotInstalled as missing:
            print(f"skipped {name}: {missing}", flush=True)
            continue
        ready.append(name)
    return ready


@dataclass(frozen=True, slots=True)
class CeilingRun:
    """One client's run at one concurrency in one round; ``startup``: its run of one-token requests."""

    client: str
    concurrency: int
    round: int
    startup: bool
    tok_s: float
    """Output tok/s as the client itself reports it (its own window)."""
    output_tokens: int
    cpu_s: float
    wall_s: float
    completed: int
    failed: int
    left_running: int = 0


def spec_for(url: str, tokenizer: Path, name: str, concurrency: int, requests: int, tokens: int,
             peers_dir: Path = PEERS_DIR) -> CrosscheckSpec:
    workload = RandomWorkload(input_tokens=INPUT_TOKENS, output_tokens=tokens, num_requests=requests,
                              warmup_requests=0)
    return CrosscheckSpec(base_url=url, model="loopback", tokenizer_dir=tokenizer, workload=workload,
                          concurrency=concurrency, client=name, peers_dir=peers_dir)


def measure(name: str, spec: CrosscheckSpec, round_: int, *, startup: bool = False) -> CeilingRun:
    """One counted run of the client ``name`` for ``spec``; a failed run or a missing result is an error."""
    client = load_client(name)
    with tempfile.TemporaryDirectory(prefix=f"client-bench-{name}-") as tmp:
        argv = client.argv(spec, round_, Path(tmp))
        counted = run_counted(argv)
        result = Path(tmp) / client.result_file
        if counted.rc != 0 or not result.is_file():
            raise RuntimeError(f"{client.title} exited {counted.rc} without a result ({client.result_file}):\n"
                               f"{counted.output[-3000:]}")
        figures = client.figures(result, round_)
    return CeilingRun(name, spec.concurrency, round_, startup, figures.output_throughput,
                      figures.completed * spec.workload.output_tokens, counted.cpu_s, counted.wall_s,
                      figures.completed, figures.failed, counted.left_running)


@dataclass(frozen=True, slots=True)
class CeilingRow:
    """One client at one concurrency: medians over its rounds and their spread (min, max)."""

    client: str
    concurrency: int
    rounds: int
    tok_s: float
    tok_s_spread: tuple[float, float]
    cpu_s: float
    startup_cpu_s: float | None
    tok_per_cpu_s: float
    tok_per_net_cpu_s: float | None
    """Output tokens per CPU-second above the client's median startup run; None when not above it."""
    net_spread: tuple[float, float] | None
    p99_stamp_ms: float | None
    failed: int


def _spread(values: Sequence[float]) -> tuple[float, float]:
    return min(values), max(values)


def build_rows(runs: Sequence[CeilingRun], stamps: Mapping[tuple[str, int], float] | None = None) -> list[CeilingRow]:
    """The table: per concurrency, then per client in the order its runs first appear; each load run's net CPU is
    its CPU less the median of the client's startup runs at that concurrency."""
    stamps = stamps or {}
    rows = []
    cells = dict.fromkeys((r.client, r.concurrency) for r in runs if not r.startup)
    for client, concurrency in sorted(cells, key=lambda cell: cell[1]):
        cell = [r for r in runs if (r.client, r.concurrency) == (client, concurrency) and not r.startup]
        startups = [r.cpu_s for r in runs if (r.client, r.concurrency) == (client, concurrency) and r.startup]
        base = statistics.median(startups) if startups else None
        nets = [r.output_tokens / (r.cpu_s - base) for r in cell if base is not None and r.cpu_s > base]
        complete = len(nets) == len(cell)
        rows.append(CeilingRow(
            client, concurrency, len(cell), statistics.median(r.tok_s for r in cell), _spread([r.tok_s for r in cell]),
            statistics.median(r.cpu_s for r in cell), base,
            statistics.median(r.output_tokens / r.cpu_s for r in cell),
            statistics.median(nets) if complete else None, _spread(nets) if complete else None,
            stamps.get((client, concurrency)), sum(r.failed for r in cell)))
    return rows


def _n(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def markdown_table(rows: Sequence[CeilingRow]) -> str:
    """The rows as a markdown table: medians over rounds, the spread (min-max) beside them."""
    lines = ["| client | conc | rounds | output tok/s | spread | CPU-s | startup CPU-s | tok per CPU-s "
             "| tok per CPU-s net of startup | spread | p99 stamping delay (ms) | failed |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        net = f"{_n(r.net_spread[0])}-{_n(r.net_spread[1])}" if r.net_spread else "n/a"
        lines.append(f"| {r.client} | {r.concurrency} | {r.rounds} | {_n(r.tok_s)} | "
                     f"{_n(r.tok_s_spread[0])}-{_n(r.tok_s_spread[1])} | {_n(r.cpu_s, 2)} | "
                     f"{_n(r.startup_cpu_s, 2)} | {_n(r.tok_per_cpu_s)} | {_n(r.tok_per_net_cpu_s)} | {net} | "
                     f"{_n(r.p99_stamp_ms, 3)} | {r.failed} |")
    return "\n".join(lines)


def ratios_to(rows: Sequence[CeilingRow], peer: str) -> dict[int, float]:
    """Ours / ``peer``'s net tok per CPU-s, at each concurrency both were measured at with a net figure."""
    by = {(r.client, r.concurrency): r.tok_per_net_cpu_s for r in rows}
    out = {}
    for (client, concurrency), ours in by.items():
        theirs = by.get((peer, concurrency))
        if client == OurClient.name and ours is not None and theirs:
            out[concurrency] = ours / theirs
    return out


def to_json(rows: Sequence[CeilingRow], runs: Sequence[CeilingRun], meta: Mapping[str, Any]) -> str:
    return json.dumps({**meta, "rows": [asdict(r) for r in rows], "runs": [asdict(r) for r in runs]}, indent=2)
