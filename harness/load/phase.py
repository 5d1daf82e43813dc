"""One phase of a load run (the warm-up, or the measured requests): its planned work, the sending of each request
or session, and the watch that stops sending to a server that has gone.

When each piece of work is sent is the scheduler's (``harness.load.runner``); this module sends it, keeps its record
(stamped with the run's repeat, reported to the progress line) and never lets a request's failure escape: a request
the server refused is a record, and once ``abort_after_connection_errors`` in a row were refused the rest are
recorded as ``not_sent`` without being sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, replace

from harness.load.client import StreamingClient, exchange
from harness.load.load_spec import LoadSpec
from harness.load.progress import Progress
from harness.load.prompts import PlannedRequest, PlannedSession, kind_of
from harness.load.records import ErrorInfo, RequestRecord

log = logging.getLogger(__name__)


AUTH_REFUSED = (401, 403)
"""Answers that say the credentials are wrong: every later request would get the same, so none is sent."""


@dataclass(slots=True)
class ServerWatch:
    """Counts consecutive refused connections to tell a dead server from a slow one, and stops at the first
    refusal of the credentials (a key revoked mid-run: nothing more is sent to a server that said no)."""

    limit: int
    streak: int = 0
    refused_with: int | None = None

    def observe(self, record: RequestRecord) -> None:
        refused = record.error is not None and record.error.kind == "connection"
        self.streak = self.streak + 1 if refused else 0
        if refused and self.streak == self.limit:
            log.warning("%d requests in a row could not connect; the server looks gone, sending no more",
                        self.limit)
        status = record.error.status_code if record.error is not None else None
        if status in AUTH_REFUSED and self.refused_with is None:
            self.refused_with = status
            log.warning("the server refused the credentials (HTTP %d); sending no more", status)

    @property
    def server_gone(self) -> bool:
        return (self.limit > 0 and self.streak >= self.limit) or self.refused_with is not None

    @property
    def why_not_sent(self) -> str:
        if self.refused_with is not None:
            return f"not sent: the server refused the credentials (HTTP {self.refused_with})"
        return "not sent: the server stopped accepting connections"


Work = PlannedRequest | PlannedSession
"""What a user slot or an arrival takes on: one request, or (a session kind's) a whole session."""


class WorkQueue:
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


class Phase:
    """Sends one phase's requests and collects their records; shared by both modes."""

    def __init__(self, client: StreamingClient, spec: LoadSpec, run_start: float, watch: ServerWatch,
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
                error=ErrorInfo("not_sent", self.watch.why_not_sent)), ""
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
            # the run-wide line (harness.pipeline.run_progress) says how far the run is; this is for a debug log
            log.debug("%s: %d requests done", self.name, len(self.records))
