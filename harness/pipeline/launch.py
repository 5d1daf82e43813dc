"""One launch of one server configuration: start it, measure its cells on it (warm-up, load, counters,
telemetry, a profile window), run its SLO searches, run parity on it, and record every cell's result. A failure
inside a cell (server will not start, dies mid-cell, every request fails) becomes that cell's recorded result; a
server that died is relaunched once for the cells still to run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path

from harness.cluster import Placement
from harness.config import Matrix, Slo
from harness.errors import LaunchError, ServerLost
from harness.load import PROMPT_BLOCK, LoadSpec, RequestRecord, run_load, write_jsonl
from harness.metrics import CellSummary, combine, summarize
from harness.parity import ParityStage
from harness.pipeline.search import run_search
from harness.pipeline.start_ahead import StartedAhead
from harness.pipeline.work import GroupWork
from harness.plan import MAX_RUNS, Cell, ServerConfig
from harness.profiling import ProfiledServer, ProfileStage
from harness.result_records import CellResult
from harness.servers import (
    LaunchSpec,
    MetricsSnapshot,
    RemoteServer,
    Runtime,
    ServerProcess,
    ServerStats,
    deployment_server,
    deployment_spec,
    free_port,
    get_runtime,
    launch_spec,
    resolve_model_path,
    scrape_all,
    server_delta,
)
from harness.store import Store, now_iso
from harness.telemetry import CellOutput, telemetry

log = logging.getLogger(__name__)
MAX_LAUNCHES_PER_SERVER = 2


def _failed(cell: Cell, started: str, reason: str, log_tail: str = "", ready_s: float | None = None) -> CellResult:
    log.error("cell %s failed: %s", cell.label, reason)
    return CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="failed",
                      reason=reason, log_tail=log_tail or None, started_at=started, finished_at=now_iso(),
                      server_ready_s=ready_s)


def failed_result(cell: Cell, reason: str, log_tail: str = "") -> CellResult:
    """A cell's recorded failure decided outside its launch (a Slurm job lost before it measured the cell)."""
    return _failed(cell, now_iso(), reason, log_tail)


async def run_cell(cell: Cell, srv: ServerProcess, runtime: Runtime, store: Store, slo: Slo,
                   launch: int | None = None, output: CellOutput | None = None) -> CellResult:
    """Warm up, load-test (``cell.repeats`` runs, or as many as its minimum measured duration takes:
    ``another_run``) and summarise one cell on a ready server; failures come back as a failed result. ``launch``
    is which of the matrix's launches this is (None: the run has one); ``output`` (the telemetry stage's) is told
    when the measured load starts and given the measured requests."""
    started = now_iso()
    store.write_cell(cell)
    log_offset = srv.log_path.stat().st_size if srv.log_path.exists() else 0
    counters = runtime.speculation_counters
    gpus = getattr(cell.server.hardware, "gpus_per_replica", None)  # None on a CPU: no per-GPU figures
    gpus = gpus * cell.server.topology.parts if gpus is not None else None  # every server of a deployment
    records: list[RequestRecord] = []
    runs: list[CellSummary] = []
    snapshots: list[tuple[MetricsSnapshot, MetricsSnapshot]] = []
    measured_s = 0.0
    at_least = f", runs until {cell.min_measured_s:g} s measured" if cell.min_measured_s is not None else ""
    log.info("cell %s: %d requests at concurrency %d, %d repeat(s)%s", cell.label,
             cell.workload.requests_for(cell.concurrency), cell.concurrency, cell.repeats, at_least)
    lost = False
    while another_run(cell, runs, measured_s):
        repeat = len(runs)
        before: list[MetricsSnapshot] = []

        async def measure_start(before: list[MetricsSnapshot] = before, first: bool = repeat == 0) -> None:
            # Called after warm-up, so its traffic stays out of the deltas; a server gone here fails the cell
            # below, as data.
            with contextlib.suppress(ServerLost):
                before.append(await scrape_all(srv.metrics_urls))
            if output is not None and first:
                await output.measure_started()

        spec = LoadSpec(base_url=srv.base_url, model=runtime.served_model_name(cell.server),
                        workload=cell.workload, concurrency=cell.concurrency,
                        tokenizer_dir=tokenizer_dir(cell.server),
                        request_timeout_s=cell.server.settings.request_timeout_s,
                        prompt_offset=prompt_offset(cell, repeat), pattern=cell.load, warmup=repeat == 0,
                        repeat=repeat, label=cell.label)
        result = await run_load(spec, on_measure_start=measure_start)
        records += result.records
        measured_s += result.duration_s
        after = None
        if srv.alive and before:
            with contextlib.suppress(ServerLost):  # died while the repeat ran, not reaped yet; or only its metrics
                after = await scrape_all(srv.metrics_urls)
        if after is None:
            # A launched server that does not answer has gone (confirm_lost stops what is left of it); a deployment
            # that still answers lost only its metrics (another host), and the run keeps its client figures
            await srv.confirm_lost()
            if not srv.alive:
                lost = True
                break
            log.warning("cell %s: the server answers but its metrics did not; this run has no server figures",
                        cell.label)
            runs.append(summarize(result.records, result.duration_s, slo, gpus=gpus, client=result.client))
            continue
        snapshots.append((before[0], after))
        speculation = counters.delta(before[0], after, cell.server.speculation) if counters else None
        runs.append(summarize(result.records, result.duration_s, slo, gpus=gpus, client=result.client,
                              speculation=speculation, server=_server_view(runtime, before[0], after)))
    write_jsonl(store.records_path(cell, launch), records)
    store.write_server_log(cell, _log_since(srv.log_path, log_offset), launch)
    if not srv.alive or lost:
        return _failed(cell, started, srv.gone_reason, srv.log_tail(), srv.ready_after_s)
    if output is not None:
        output.records, output.measured_s = tuple(records), measured_s
    # pooled over every repeat (nothing runs between them); none where no run had the server's metrics around it
    first, last = (snapshots[0][0], snapshots[-1][1]) if snapshots else (None, None)
    summary = combine(runs, speculation=counters.delta(first, last, cell.server.speculation)
                      if counters and first is not None and last is not None else None,
                      server=_server_view(runtime, first, last) if first is not None and last is not None else None)
    if summary.completed == 0:
        return _failed(cell, started, f"every request failed: {summary.error_kinds}", srv.log_tail(),
                       srv.ready_after_s)
    return CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="ok",
                      started_at=started, finished_at=now_iso(), server_ready_s=srv.ready_after_s, summary=summary)


def another_run(cell: Cell, runs: Sequence[CellSummary], measured_s: float) -> bool:
    """Whether the cell runs its workload again: its ``repeats``, then as long as its minimum measured duration
    asks; a run in which every request failed ends the runs that minimum adds (the next would fail alike)."""
    if len(runs) < cell.repeats:
        return True
    if runs and runs[-1].completed == 0:
        return False
    return cell.min_measured_s is not None and measured_s < cell.min_measured_s and len(runs) < cell.most_runs


def _server_view(runtime: Runtime, before: MetricsSnapshot, after: MetricsSnapshot) -> ServerStats | None:
    """The server's own histograms and counters over an interval, where its engine exposes them."""
    return server_delta(before, after, runtime.server_metrics) if runtime.server_metrics else None


def prompt_offset(cell: Cell, repeat: int = 0) -> int:
    """Where a run of a cell starts in the workload's seeded stream.

    Cells on one server must not resend each other's prompts, or the engine's prefix cache would serve later
    cells' prefills, and neither may a cell's runs; a speculative cell and its ``off`` pair (on different
    servers) must send the same prompts to be comparable. Cells on one server differ in client-side settings
    only, so both rules hold when each cell's block (a multiple of ``PROMPT_BLOCK``) is a function of those
    (concurrency, request rate): the first run of a fixed-concurrency cell keeps the block it always had. A cell's
    runs follow one another in its block (the next run starts where the last one's requests end), so a dataset of a
    few hundred rows serves distinct rows to every run until it runs out.
    """
    if cell.load.request_rate is None:
        block = cell.concurrency * PROMPT_BLOCK
    else:
        key = json.dumps([cell.concurrency, cell.load.request_rate, 0]).encode()  # 0: the key its first run had
        block = (1_000 + int.from_bytes(hashlib.sha256(key).digest()[:4], "big")) * PROMPT_BLOCK
    # a timed run sends as many as its seconds allow: it gets an equal share of the block instead
    stride = cell.workload.requests_for(cell.concurrency) if cell.load.duration_s is None \
        else PROMPT_BLOCK // (MAX_RUNS + 1)
    return block + repeat * stride


def tokenizer_dir(server: ServerConfig) -> Path | None:
    path = Path(resolve_model_path(server))
    return path if path.is_dir() else None


def _log_since(path: Path, offset: int) -> bytes:
    with path.open("rb") as fh:
        fh.seek(offset)
        return fh.read()


def _window_load(cell: Cell, matrix: Matrix, runtime: Runtime, base_url: str,
                 ) -> Callable[[float | None], Awaitable[None]]:
    """The load of a profile window: the cell's own requests at its concurrency, ``profile.requests`` of them, or
    as many as ``seconds`` allow (an nsys window on a CPU, which nsys closes itself)."""
    assert matrix.profile is not None
    workload = cell.workload.model_copy(update={"num_requests": matrix.profile.requests, "warmup_requests": 0})

    async def window_load(seconds: float | None = None) -> None:
        pattern = cell.load.model_copy(update={"duration_s": seconds}) if seconds else cell.load
        await run_load(LoadSpec(base_url=base_url, model=runtime.served_model_name(cell.server), workload=workload,
                                concurrency=cell.concurrency, tokenizer_dir=tokenizer_dir(cell.server),
                                request_timeout_s=cell.server.settings.request_timeout_s, pattern=pattern,
                                prompt_offset=prompt_offset(cell, cell.most_runs), warmup=False, progress=False,
                                label=cell.label))

    return window_load


async def _profile(stage: ProfileStage, cell: Cell, matrix: Matrix, srv: ServerProcess, runtime: Runtime,
                   argv: Sequence[str]) -> None:
    """One more, short window of the cell's own load under the engine's profiler (after the measured load)."""
    load = _window_load(cell, matrix, runtime, srv.base_url)
    await stage.window(cell, srv.base_url, argv, lambda: load(None))


async def _nsys_profiles(stage: ProfileStage, cells: Sequence[Cell], matrix: Matrix, runtime: Runtime,
                         ready_s: float | None) -> None:
    """Each CPU cell's Nsight Systems capture, in a launch of its own once the group's server has stopped (two
    servers would share the cores)."""
    for cell in cells:
        host = cell.server.settings.host
        port = free_port(host)
        server = ProfiledServer(launch_spec(cell.server, port), host, port, cell.server.runtime)
        await stage.nsys(cell, server, _window_load(cell, matrix, runtime, f"http://{host}:{port}"), ready_s)


def _server(server: ServerConfig, spec: LaunchSpec, port: int, log_path: Path, store: Store,
            placement: Placement | None) -> ServerProcess:
    """The launch's server: one process here, a replica across a Slurm job's nodes, a deployment of several
    servers behind the engine's router (``axes.topology``), or a deployment the harness did not launch, reached at
    its base URL (``deployments:``)."""
    if server.is_deployment:
        return RemoteServer(server, log_path)
    if not server.topology.is_colocated:
        scratch = store.kv_scratch_dir(server.server_id).resolve()  # the engines resolve it from their own cwd
        return deployment_server(server, deployment_spec(server, port, free_port, scratch), port, log_path)
    if placement is not None:
        return placement.server(server, spec, port, log_path)
    return ServerProcess(spec, server.settings.host, port, log_path, server.settings.startup_timeout_s)


async def run_group(work: GroupWork, store: Store, matrix: Matrix, *, launch: int | None = None,
                    placement: Placement | None = None, ahead: StartedAhead | None = None) -> list[CellResult]:
    """One server configuration's work (``GroupWork``: its cells, SLO searches, profiles and parity decodings), on as
    few launches as it takes (a dead server is relaunched once); results are stored as launch ``launch`` of each
    cell. Inside a Slurm job, ``placement`` says which nodes the server's processes run on (None: here, as one
    child process). ``ahead``: its first server, started already beside another group's (``start_ahead``)."""
    server = work.group.server
    runtime = get_runtime(server.runtime)
    results: list[CellResult] = []
    profiles, parity = ProfileStage(matrix.profile, store), ParityStage(matrix.parity, store)
    todo, to_profile = list(work.cells), list(work.to_profile)
    if server.deployment is not None and not server.deployment.profile:
        to_profile = []  # somebody else's server: its profiler is called only where its deployment allows it
    under_nsys, ready_s = profiles.under_nsys(to_profile), None
    decodings, searches = list(work.decodings), list(work.searches)

    def record(cell: Cell, result: CellResult) -> None:
        store.write_result(cell, result, launch)
        results.append(result)

    async def measure(cell: Cell, *, srv: ServerProcess) -> CellResult | None:
        """A search's probe on the running server; None when the server died under it (the relaunch redoes it)."""
        if not srv.alive:
            return None
        async with telemetry(cell, store, runtime=runtime, base_urls=srv.metrics_urls, launch=launch) as output:
            result = await run_cell(cell, srv, runtime, store, matrix.slo, launch, output)
            output.summary = result.summary
        if result.status != "ok" and not srv.alive:
            return None
        record(cell, result)
        return result

    try:
        for _attempt in range(MAX_LAUNCHES_PER_SERVER):
            if not (todo or to_profile or decodings or searches):
                break
            serving: contextlib.AbstractAsyncContextManager[ServerProcess]
            if ahead is not None:
                srv, spec, serving, ahead = ahead.server, ahead.spec, ahead.running(), None
            else:
                port = free_port(server.settings.host)
                spec = LaunchSpec(argv=()) if server.is_deployment else profiles.launch(launch_spec(server, port),
                                                                                          to_profile)
                srv = _server(server, spec, port, store.server_log(server.server_id), store, placement)
                serving = srv
            started = now_iso()
            try:
                async with serving:
                    ready_s = srv.ready_after_s
                    while todo and srv.alive:
                        cell = todo.pop(0)
                        async with telemetry(cell, store, runtime=runtime, base_urls=srv.metrics_urls,
                                             launch=launch) as output:
                            result = await run_cell(cell, srv, runtime, store, matrix.slo, launch, output)
                            output.summary = result.summary
                        record(cell, result)
                        if cell in to_profile and result.status == "ok" and srv.alive:
                            await _profile(profiles, cell, matrix, srv, runtime, spec.argv)
                            to_profile.remove(cell)
                    while searches and srv.alive and not todo:
                        if not await run_search(searches[0], store, matrix.slo, partial(measure, srv=srv), launch):
                            break  # the server died: the next launch resumes the search from its stored probes
                        searches.pop(0)
                    while to_profile and srv.alive and not todo:  # profiles of cells measured in an earlier run
                        await _profile(profiles, to_profile.pop(0), matrix, srv, runtime, spec.argv)
                    if decodings and srv.alive:
                        await parity.run(server, srv.base_url, runtime.served_model_name(server), decodings)
                        decodings = []
            except LaunchError as exc:
                what = "not reachable" if server.is_deployment else "server failed to start"
                for cell in todo:
                    record(cell, _failed(cell, started, f"{what}: {exc}", exc.log_tail))
                return results
        for cell in todo:  # the server kept dying: record the rest rather than loop forever
            record(cell, _failed(cell, now_iso(), f"server died {MAX_LAUNCHES_PER_SERVER} times; not run"))
        if placement is None and server.topology.is_colocated and not server.is_deployment:  # nsys wraps a process
            await _nsys_profiles(profiles, [c for c in under_nsys if c not in to_profile], matrix, runtime, ready_s)
        return results
    finally:
        if ahead is not None:  # started for work that turned out to need no launch
            await ahead.discard()
        shutil.rmtree(store.kv_scratch_dir(server.server_id), ignore_errors=True)  # KV files a connector left
