"""The load test of one cell: warm up, then send the measured requests on the cell's load pattern.

This module owns scheduling only. Prompts come from ``prompts.py``, send times from ``arrivals.py``, the wire from
``client.py``; statistics are ``harness.metrics.summary``'s. Two modes, as ``vllm bench serve`` has them:
``concurrency`` users each sending their next request as soon as the previous one finished (fixed concurrency), or
requests sent on a seeded arrival schedule (a request rate, optionally bursty) with at most ``concurrency`` in
flight. A run is bounded by the workload's request count or by the pattern's duration; warm-up always runs at fixed
concurrency. A workload's kind (``prompts.WorkloadKind``) may bring its own shape: its unit of work may be a session
(an ``agent``'s turns are sent one after another, each carrying the server's previous answers, with think time
between them), so ``concurrency`` counts sessions in flight and a request rate starts sessions; or its requests may
carry their own due times (a ``trace``), and are then sent when due (at most ``concurrency`` in flight), whatever the
pattern says.

A server that dies mid-run makes requests fail fast (refused connections), so the run still ends; once
``abort_after_connection_errors`` requests in a row failed to connect, the rest are recorded as ``not_sent``
instead of being sent into the void. No exception of a request escapes: failures are records.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from harness.config.load import LoadPattern
from harness.config.workloads import WorkloadBase
from harness.load.arrivals import arrival_times, user_start_offsets
from harness.load.client import StreamingClient, exchange, make_client
from harness.load.cpu_watch import ClientLoad, CpuWatch
from harness.load.progress import Progress, progress_wanted
from harness.load.prompts import PlannedRequest, PlannedSession, kind_of, make_requests
from harness.load.records import ErrorInfo, RequestRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """Everything one load run needs: where to send, what to send, how fast."""

    base_url: str
    """Server root, e.g. ``http://127.0.0.1:8123`` (the client appends ``/v1/...``)."""
    model: str
    """The served model name to put in requests."""
    workload: WorkloadBase
    concurrency: int
    """Users in fixed-concurrency mode; the cap on requests in flight in rate mode."""
    tokenizer_dir: Path | None
    """Directory holding the model's ``tokenizer.json`` (prompts are made of this vocabulary)."""
    request_timeout_s: float = 300.0
    abort_after_connection_errors: int = 8
    """Stop sending after this many consecutive refused connections (the server is gone); 0 never stops."""
    prompt_offset: int = 0
    """First measured prompt index. Cells on one server that share a workload send the same prompts unless
    this differs, and an engine's prefix cache then serves later cells' prefills from cache."""
    pattern: LoadPattern = field(default_factory=LoadPattern)
    warmup: bool = True
    """Send the workload's warm-up requests first (repeats after the first skip them)."""
    repeat: int = 0
    """Stamped on every record: which repeat of the cell this run is."""
    progress: bool | None = None
    """A live progress line; None: on an interactive terminal outside CI."""
    label: str = "load"
    """What the progress line calls this run (the cell's label)."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    records: tuple[RequestRecord, ...]
    """Warm-up records first (flagged ``warmup=True``), then measured records, each phase in index order."""
    duration_s: float
    """Wall time of the measured phase: first measured send to last measured finish (0 if nothing was sent)."""
    client: ClientLoad | None = None
    """How busy the client was during the measured phase."""


@dataclass(slots=True)
class _ServerWatch:
    """Counts consecutive refused connections to tell a dead server from a slow one."""

    limit: int
    streak: int = 0

    def observe(self, record: RequestRecord) -> None:
        refused = record.error is not None and record.error.kind == "connection"
        self.streak = self.streak + 1 if refused else 0
        if refused and self.streak == self.limit:
            log.warning("%d requests in a row could not connect; the server looks gone, sending no more",
                        self.limit)

    @property
    def server_gone(self) -> bool:
        return self.limit > 0 and self.streak >= self.limit


Work = PlannedRequest | PlannedSession
"""What a user slot or an arrival takes on: one request, or (a session kind's) a whole session."""


class _Requests:
    """The measured phase's planned work: all of it up front, or planned in batches for a timed run."""

    def __init__(self, spec: LoadSpec, count: int | None) -> None:
        self.spec, self.count = spec, count
        self.kind = kind_of(spec.workload)
        self.queue: deque[Work] = deque()
        self.next_index = spec.prompt_offset
        self.batch = max(64, 4 * spec.concurrency)

    def plan(self, count: int) -> None:
        self.queue.extend(self.kind.measured_work(count, self.spec.tokenizer_dir, self.next_index))
        self.next_index += count

    def prepare(self) -> None:
        """Plan before the clock starts: everything for a count-bounded run, a first batch for a timed one."""
        self.plan(self.count if self.count is not None else self.batch)

    async def next(self) -> Work | None:
        if not self.queue and self.count is None:
            # Planning blocks the event loop; a thread keeps other requests' chunks stamped on time.
            await asyncio.to_thread(self.plan, self.batch)
        return self.queue.popleft() if self.queue else None


class _Phase:
    """Sends one phase's requests and collects their records; shared by both modes."""

    def __init__(self, client: StreamingClient, spec: LoadSpec, run_start: float, watch: _ServerWatch,
                 progress: Progress | None, total: int | None, name: str) -> None:
        self.client, self.spec, self.run_start, self.watch = client, spec, run_start, watch
        self.progress, self.name = progress, name
        self.records: list[RequestRecord] = []
        self.step = max(1, (total or 500) // 10)

    async def send(self, work: Work, due: float | None = None) -> None:
        """Send one request (stamped with when it was ``due``, run clock), or run a whole session."""
        if not isinstance(work, PlannedRequest):
            await self.session(work)
            return
        record, _ = await self.exchange(work)
        self.keep(record if due is None else replace(record, due_time=due))

    async def exchange(self, request: PlannedRequest, keep_text: bool = False) -> tuple[RequestRecord, str]:
        spec = self.spec
        if self.watch.server_gone:
            at = time.perf_counter() - self.run_start
            return RequestRecord(
                index=request.index, warmup=request.warmup, input_tokens=request.input_tokens,
                max_tokens=request.max_tokens, send_time=at, end_time=at, session=request.session, turn=request.turn,
                error=ErrorInfo("not_sent", "not sent: the server stopped accepting connections")), ""
        record, text = await exchange(self.client, request, model=spec.model, run_start=self.run_start,
                                      timeout_s=spec.request_timeout_s, keep_text=keep_text)
        self.watch.observe(record)
        return record, text

    async def session(self, session: PlannedSession) -> None:
        """A session: each turn carries the conversation so far, the server's own answers included; a
        failed turn ends the session, as it would end a real agent's."""
        messages = session.first_messages()
        answer = ""
        for turn in range(session.turns):
            if turn:
                if session.think_s[turn - 1] > 0:
                    await asyncio.sleep(session.think_s[turn - 1])
                messages += session.follow_up(turn, answer)
            record, answer = await self.exchange(session.request(turn, messages), keep_text=True)
            self.keep(record)
            if record.error is not None:
                return

    def keep(self, record: RequestRecord) -> None:
        spec = self.spec
        if spec.repeat:
            record = replace(record, repeat=spec.repeat)
        self.records.append(record)
        if self.progress is not None:
            self.progress.update(record)
        if record.error is not None:
            log.debug("%s request %d failed: %s: %s", self.name, record.index, record.error.kind,
                      record.error.message)
        if len(self.records) % self.step == 0 and (self.progress is None or not self.progress.enabled):
            log.info("%s: %d requests done", self.name, len(self.records))  # the live line says it otherwise


async def _fixed_concurrency(phase: _Phase, requests: _Requests, deadline: float | None) -> None:
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


async def _request_rate(phase: _Phase, requests: _Requests, deadline: float | None) -> None:
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


async def _due_times(phase: _Phase, requests: _Requests, deadline: float | None) -> None:
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


async def _run_phase(phase: _Phase, requests: _Requests) -> list[RequestRecord]:
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
    warmups = _Requests(replace(spec, pattern=LoadPattern()), warm_count)
    warmups.queue.extend(make_requests(workload, warm_count, spec.tokenizer_dir, warmup=True))
    count = None if pattern.duration_s is not None else workload.requests_for(spec.concurrency)
    measured = _Requests(spec, count)
    measured.prepare()  # before the clock: a slow prompt maker must not delay the first sends
    bound = f"{pattern.duration_s:g} s" if count is None else f"{count} requests"
    log.info("load: %s at concurrency %d%s: %d warm-up + %s to %s", workload.label,
             spec.concurrency, f", {pattern.request_rate:g} req/s" if pattern.request_rate else "", warm_count,
             bound, spec.base_url)
    watch = _ServerWatch(spec.abort_after_connection_errors)
    total = count if measured.kind.countable else None  # e.g. an agent's sessions: turns the plan cannot count
    progress = Progress(f"{spec.label} (repeat {spec.repeat + 1})" if spec.repeat else spec.label, total,
                        enabled=progress_wanted() if spec.progress is None else spec.progress)
    run_start = time.perf_counter()
    async with make_client(spec.base_url, concurrency=spec.concurrency, timeout_s=spec.request_timeout_s,
                           transport=transport) as client:
        warm = _Phase(client, replace(spec, pattern=LoadPattern()), run_start, watch, None, warm_count, "warm-up")
        warm_records = await _run_phase(warm, warmups)
        if on_measure_start is not None:
            await on_measure_start()
        cpu = CpuWatch()
        cpu.start()
        phase = _Phase(client, spec, run_start, watch, progress, total, "measured")
        measured_records = await _run_phase(phase, measured)
        client_load = await cpu.stop()
    progress.close()
    if client_load.bottleneck:
        log.warning("the client may have been the bottleneck: %s", client_load.reason)
    elif client_load.starved:
        log.warning("the client was kept waiting for a core: %s", client_load.reason)
    sent = [r for r in measured_records if r.error is None or r.error.kind != "not_sent"]
    duration = max(r.end_time for r in sent) - min(r.send_time for r in sent) if sent else 0.0
    return LoadResult(records=tuple(warm_records + measured_records), duration_s=duration, client=client_load)
