"""The load test of one cell: warm up, then keep a fixed number of requests in flight until all are done.

This module owns scheduling only (like ``vllm bench serve --max-concurrency N`` at an infinite request rate):
``concurrency`` workers each send their next request as soon as their previous one finishes. Prompts come from
``prompts.py``, the wire from ``client.py``; statistics are ``harness.metrics``'s.

A server that dies mid-run makes requests fail fast (refused connections), so the run still ends; once
``abort_after_connection_errors`` requests in a row failed to connect, the rest are recorded as ``not_sent``
instead of being sent into the void.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from harness.load.client import make_client, send_request
from harness.load.prompts import PlannedRequest, make_requests
from harness.load.records import ErrorInfo, RequestRecord
from harness.workloads import RandomWorkload

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """Everything one load run needs: where to send, what to send, how many at once."""

    base_url: str
    """Server root, e.g. ``http://127.0.0.1:8123`` (the client appends ``/v1/...``)."""
    model: str
    """The served model name to put in requests."""
    workload: RandomWorkload
    concurrency: int
    tokenizer_dir: Path | None
    """Directory holding the model's ``tokenizer.json`` (random prompts are token ids of this vocabulary)."""
    request_timeout_s: float = 300.0
    abort_after_connection_errors: int = 8
    """Stop sending after this many consecutive refused connections (the server is gone); 0 never stops."""
    prompt_offset: int = 0
    """First measured prompt index. Cells on one server that share a workload send the same prompts unless
    this differs, and an engine's prefix cache then serves later cells' prefills from cache."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    records: tuple[RequestRecord, ...]
    """Warm-up records first (flagged ``warmup=True``), then measured records, each phase in index order."""
    duration_s: float
    """Wall time of the measured phase: first measured send to last measured finish (0 if nothing was sent)."""


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


def _not_sent(planned: PlannedRequest, at: float) -> RequestRecord:
    return RequestRecord(
        index=planned.index, warmup=planned.warmup, input_tokens=planned.input_tokens,
        max_tokens=planned.max_tokens, send_time=at, end_time=at,
        error=ErrorInfo("not_sent", "not sent: the server stopped accepting connections"),
    )


async def _run_phase(
    client: httpx.AsyncClient, spec: LoadSpec, planned: list[PlannedRequest], run_start: float,
    watch: _ServerWatch,
) -> list[RequestRecord]:
    """Send ``planned`` with ``spec.concurrency`` in flight until every one has a record."""
    queue = deque(planned)
    records: list[RequestRecord] = []
    phase = "warm-up" if planned and planned[0].warmup else "measured"
    step = max(1, len(planned) // 10)

    async def worker() -> None:
        while queue:
            request = queue.popleft()
            if watch.server_gone:
                records.append(_not_sent(request, time.perf_counter() - run_start))
                continue
            record = await send_request(
                client, request, model=spec.model, run_start=run_start, timeout_s=spec.request_timeout_s
            )
            watch.observe(record)
            records.append(record)
            if record.error is not None:
                log.debug("%s request %d failed: %s: %s", phase, record.index, record.error.kind,
                          record.error.message)
            if len(records) % step == 0 or len(records) == len(planned):
                log.info("%s: %d/%d requests done", phase, len(records), len(planned))

    async with asyncio.TaskGroup() as workers:
        for _ in range(min(spec.concurrency, len(planned))):
            workers.create_task(worker())
    return sorted(records, key=lambda record: record.index)


async def run_load(
    spec: LoadSpec, *, transport: httpx.AsyncBaseTransport | None = None,
    on_measure_start: Callable[[], Awaitable[None]] | None = None,
) -> LoadResult:
    """Run the warm-up, then the measured requests, at fixed concurrency; failed requests are records.

    Args:
        transport: the HTTP transport (tests pass ``httpx.MockTransport``); default: real connections.
        on_measure_start: awaited between warm-up and the measured phase, e.g. to snapshot server counters
            so that warm-up traffic stays out of per-cell deltas.
    """
    if spec.concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {spec.concurrency}")
    workload = spec.workload
    warmups = make_requests(workload, workload.warmup_requests, spec.tokenizer_dir, warmup=True)
    measured = make_requests(
        workload, workload.requests_for(spec.concurrency), spec.tokenizer_dir, offset=spec.prompt_offset
    )
    log.info("load: %s at concurrency %d: %d warm-up + %d measured requests to %s",
             workload.label, spec.concurrency, len(warmups), len(measured), spec.base_url)
    watch = _ServerWatch(spec.abort_after_connection_errors)
    run_start = time.perf_counter()
    async with make_client(
        spec.base_url, concurrency=spec.concurrency, timeout_s=spec.request_timeout_s, transport=transport
    ) as client:
        warm_records = await _run_phase(client, spec, warmups, run_start, watch)
        if on_measure_start is not None:
            await on_measure_start()
        measured_records = await _run_phase(client, spec, measured, run_start, watch)
    sent = [r for r in measured_records if r.error is None or r.error.kind != "not_sent"]
    duration = max(r.end_time for r in sent) - min(r.send_time for r in sent) if sent else 0.0
    return LoadResult(records=tuple(warm_records + measured_records), duration_s=duration)
