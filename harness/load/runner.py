"""The load test of one cell: warm up, then send the measured requests on the cell's load pattern.

This module owns scheduling only. Prompts come from ``prompts.py``, send times from ``arrivals.py``, the wire from
``client.py``, the sending of each request or session (and the dead-server watch) from ``phase.py``, what a run is
asked and hands back from ``load_spec.py``; statistics are ``harness.metrics.cell_summary``'s. Two modes, as
``vllm bench serve`` has them: ``concurrency`` users each sending their next request as soon as the previous one
finished (fixed concurrency), or requests sent on a seeded arrival schedule (a request rate, optionally bursty) with
at most ``concurrency`` in flight. A run is bounded by the workload's request count or by the pattern's duration;
warm-up always runs at fixed concurrency. A workload's kind (``prompts.WorkloadKind``) may bring its own shape: its
unit of work may be a session (an ``agent``'s turns are sent one after another, each carrying the server's previous
answers, with think time between them), so ``concurrency`` counts sessions in flight and a request rate starts
sessions; or its requests may carry their own due times (a ``trace``), and are then sent when due (at most
``concurrency`` in flight), whatever the pattern says.

A server that dies mid-run makes requests fail fast (refused connections), so the run still ends; once
``abort_after_connection_errors`` requests in a row failed to connect, the rest are recorded as ``not_sent``
instead of being sent into the void. No exception of a request escapes: failures are records.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import httpx

from harness.config.load import LoadPattern
from harness.load.arrivals import arrival_times, user_start_offsets
from harness.load.client import make_client
from harness.load.cpu_watch import CpuWatch
from harness.load.load_spec import LoadResult, LoadSpec, measured_duration
from harness.load.phase import Phase, ServerWatch, Work, WorkQueue
from harness.load.progress import Progress, progress_wanted
from harness.load.prompts import PlannedRequest, kind_of, make_requests
from harness.load.records import RequestRecord

log = logging.getLogger(__name__)


async def _fixed_concurrency(phase: Phase, requests: WorkQueue, deadline: float | None) -> None:
    offsets = user_start_offsets(phase.spec.pattern, phase.spec.concurrency)
    started = time.perf_counter()

    async def user(start_after: float) -> None:
        if start_after > 0:
            await asyncio.sleep(start_after - (time.perf_counter() - started))
        while deadline is None or time.perf_counter() < deadline:
            request = await requests.next()
            if request is None or (deadline is not None and time.perf_counter() >= deadline):
                return  # planning a timed run's next batch can outlast its deadline
            await phase.send(request)

    async with asyncio.TaskGroup() as users:
        for offset in offsets:
            users.create_task(user(offset))


async def _request_rate(phase: Phase, requests: WorkQueue, deadline: float | None) -> None:
    spec = phase.spec
    times = arrival_times(spec.pattern, spec.workload.seed, count=requests.count)
    slots = asyncio.Semaphore(spec.concurrency)

    async def limited(work: Work, due: float) -> None:
        async with slots:
            await phase.send(work, due=due)

    started = time.perf_counter()
    offset = started - phase.run_start
    async with asyncio.TaskGroup() as inflight:
        for due in times.tolist():
            delay = started + due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if deadline is not None and time.perf_counter() >= deadline:
                break
            request = await requests.next()
            if request is None:
                break
            inflight.create_task(limited(request, offset + due))


async def _due_times(phase: Phase, requests: WorkQueue, deadline: float | None) -> None:
    """The workload's own timing (a trace's): each request sent when it is due, at most ``concurrency`` in flight."""
    slots = asyncio.Semaphore(phase.spec.concurrency)
    started = time.perf_counter()
    offset = started - phase.run_start

    async def limited(request: PlannedRequest, due: float) -> None:
        async with slots:
            await phase.send(request, due=due)

    async with asyncio.TaskGroup() as inflight:
        while (work := await requests.next()) is not None:
            assert isinstance(work, PlannedRequest) and work.due_s is not None  # own_timing: its kind plans them
            delay = started + work.due_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if deadline is not None and time.perf_counter() >= deadline:
                break
            inflight.create_task(limited(work, offset + work.due_s))


async def _run_phase(phase: Phase, requests: WorkQueue) -> list[RequestRecord]:
    pattern = phase.spec.pattern
    deadline = time.perf_counter() + pattern.duration_s if pattern.duration_s is not None else None
    if phase.name == "measured" and kind_of(phase.spec.workload).own_timing:
        schedule = _due_times
    else:
        schedule = _fixed_concurrency if pattern.request_rate is None else _request_rate
    await schedule(phase, requests, deadline)
    return sorted(phase.records, key=lambda record: (record.index, record.turn or 0))


async def run_load(
    spec: LoadSpec, *, transport: httpx.AsyncBaseTransport | None = None,
    on_measure_start: Callable[[], Awaitable[None]] | None = None,
) -> LoadResult:
    """Run the warm-up, then the measured requests on the spec's pattern; failed requests are records.

    Args:
        transport: an httpx transport (tests pass ``httpx.MockTransport``); default: the lean pooled client.
        on_measure_start: awaited between warm-up and the measured phase, e.g. to snapshot server counters
            so that warm-up traffic stays out of per-cell deltas.
    """
    if spec.concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {spec.concurrency}")
    workload, pattern = spec.workload, spec.pattern
    warm_count = workload.warmup_requests if spec.warmup else 0
    warmups = WorkQueue(replace(spec, pattern=LoadPattern()), warm_count)
    warmups.queue.extend(make_requests(workload, warm_count, spec.tokenizer_dir, warmup=True))
    count = None if pattern.duration_s is not None else workload.requests_for(spec.concurrency)
    measured = WorkQueue(spec, count)
    measured.prepare()  # before the clock: a slow prompt maker must not delay the first sends
    bound = f"{pattern.duration_s:g} s" if count is None else f"{count} requests"
    log.info("load: %s at concurrency %d%s: %d warm-up + %s to %s", workload.label,
             spec.concurrency, f", {pattern.request_rate:g} req/s" if pattern.request_rate else "", warm_count,
             bound, spec.base_url)
    watch = ServerWatch(spec.abort_after_connection_errors)
    total = count if measured.kind.countable else None  # e.g. an agent's sessions: turns the plan cannot count
    progress = Progress(f"{spec.label} (repeat {spec.repeat + 1})" if spec.repeat else spec.label, total,
                        enabled=progress_wanted() if spec.progress is None else spec.progress)
    run_start = time.perf_counter()
    async with make_client(spec.base_url, concurrency=spec.concurrency, timeout_s=spec.request_timeout_s,
                           transport=transport) as client:
        warm = Phase(client, replace(spec, pattern=LoadPattern()), run_start, watch, None, warm_count, "warm-up")
        warm_records = await _run_phase(warm, warmups)
        if on_measure_start is not None:
            await on_measure_start()
        cpu = CpuWatch()
        cpu.start()
        phase = Phase(client, spec, run_start, watch, progress, total, "measured")
        measured_records = await _run_phase(phase, measured)
        client_load = await cpu.stop()
    progress.close()
    if client_load.bottleneck:
        log.warning("the client may have been the bottleneck: %s", client_load.reason)
    elif client_load.starved:
        log.warning("the client was kept waiting for a core: %s", client_load.reason)
    return LoadResult(records=tuple(warm_records + measured_records), duration_s=measured_duration(measured_records),
                      client=client_load)
