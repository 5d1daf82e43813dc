"""One phase of a load run against a scripted client: the planned work, the records kept, and the watch that stops
sending to a server whose connections are refused."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from harness.config import RandomWorkload
from harness.load import LoadSpec
from harness.load.http_connection import ConnectionBroken, EventSink
from harness.load.phase import Phase, ServerWatch, WorkQueue
from harness.load.prompts import PlannedRequest
from harness.load.records import ErrorInfo, RequestRecord


@dataclass
class Scripted:
    """A streaming client that answers every request with ``tokens`` one-token chunks, or refuses to connect."""

    tokens: int = 3
    refuse: bool = False
    bodies: list[dict[str, object]] = field(default_factory=list)

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        self.bodies.append(json.loads(body))
        if self.refuse:
            raise ConnectionBroken("connection refused", responded=False)
        for n in range(1, self.tokens + 1):
            chunk = {"choices": [{"index": 0, "text": " x"}], "usage": {"prompt_tokens": 8, "completion_tokens": n}}
            sink(json.dumps(chunk).encode(), time.perf_counter())
        sink(b"[DONE]", time.perf_counter())
        return 200, b""

    async def __aenter__(self) -> Scripted:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def _spec(tokenizer_dir: Path, **changes: object) -> LoadSpec:
    workload = RandomWorkload(input_tokens=8, output_tokens=3, num_requests=6, warmup_requests=0)
    spec = LoadSpec(base_url="http://fake", model="m", workload=workload, concurrency=2,
                    tokenizer_dir=tokenizer_dir, request_timeout_s=5.0, progress=False)
    return replace(spec, **changes)  # type: ignore[arg-type]


def _record(error: str | None) -> RequestRecord:
    return RequestRecord(index=0, warmup=False, input_tokens=8, max_tokens=3, send_time=0.0, end_time=0.1,
                         error=None if error is None else ErrorInfo(error, "x"))  # type: ignore[arg-type]


def _phase(client: Scripted, spec: LoadSpec, watch: ServerWatch | None = None) -> Phase:
    return Phase(client, spec, time.perf_counter(), watch or ServerWatch(spec.abort_after_connection_errors), None,
                 None, "measured")


def test_the_watch_counts_refused_connections_in_a_row() -> None:
    watch = ServerWatch(limit=3)
    for kind in ("connection", "connection", "http_status", "connection", "connection"):
        watch.observe(_record(kind))
    assert watch.streak == 2 and not watch.server_gone  # any other outcome starts the count again
    watch.observe(_record("connection"))
    assert watch.server_gone
    watch.observe(_record(None))
    assert not watch.server_gone
    never = ServerWatch(limit=0)
    for _ in range(20):
        never.observe(_record("connection"))
    assert not never.server_gone  # 0: a refusing server is never given up on


def test_a_counted_run_plans_everything_before_the_clock(tiny_tokenizer_dir: Path) -> None:
    work = WorkQueue(_spec(tiny_tokenizer_dir, prompt_offset=100), count=5)
    work.prepare()
    assert [w.index for w in work.queue] == [100, 101, 102, 103, 104]  # type: ignore[union-attr]


async def test_a_timed_run_plans_batch_after_batch(tiny_tokenizer_dir: Path) -> None:
    work = WorkQueue(_spec(tiny_tokenizer_dir, concurrency=20), count=None)
    work.prepare()
    assert work.batch == 80 and len(work.queue) == 80
    drawn = [await work.next() for _ in range(81)]  # the 81st is planned when the queue runs dry
    assert [w.index for w in drawn if isinstance(w, PlannedRequest)] == list(range(81))
    assert len(work.queue) == 79


async def test_a_counted_run_ends_when_its_work_does(tiny_tokenizer_dir: Path) -> None:
    work = WorkQueue(_spec(tiny_tokenizer_dir), count=1)
    work.prepare()
    assert await work.next() is not None and await work.next() is None


async def test_sent_requests_are_kept_with_when_they_were_due_and_their_repeat(tiny_tokenizer_dir: Path) -> None:
    client = Scripted()
    spec = _spec(tiny_tokenizer_dir, repeat=2)
    work = WorkQueue(spec, count=2)
    work.prepare()
    phase = _phase(client, spec)
    first, second = await work.next(), await work.next()
    assert first is not None and second is not None
    await phase.send(first, due=0.25)
    await phase.send(second)
    assert [r.due_time for r in phase.records] == [0.25, None]
    assert all(r.ok and r.output_tokens == 3 and r.repeat == 2 for r in phase.records)
    assert [b["model"] for b in client.bodies] == ["m", "m"]


async def test_once_the_server_is_gone_the_rest_are_recorded_unsent(tiny_tokenizer_dir: Path) -> None:
    client = Scripted(refuse=True)
    spec = _spec(tiny_tokenizer_dir, abort_after_connection_errors=2)
    work = WorkQueue(spec, count=5)
    work.prepare()
    phase = _phase(client, spec)
    while (request := await work.next()) is not None:
        await phase.send(request)
    assert [r.error.kind for r in phase.records if r.error] == ["connection"] * 2 + ["not_sent"] * 3
    assert len(client.bodies) == 2  # nothing more was sent into the void
    unsent = phase.records[-1]
    assert unsent.send_time == unsent.end_time and unsent.index == 4


@pytest.mark.parametrize("limit", [0, 100])
async def test_a_watch_that_never_gives_up_keeps_sending(tiny_tokenizer_dir: Path, limit: int) -> None:
    client = Scripted(refuse=True)
    spec = _spec(tiny_tokenizer_dir, abort_after_connection_errors=limit)
    work = WorkQueue(spec, count=4)
    work.prepare()
    phase = _phase(client, spec)
    while (request := await work.next()) is not None:
        await phase.send(request)
    assert len(client.bodies) == 4 and {r.error.kind for r in phase.records if r.error} == {"connection"}


@dataclass
class KeyRevoked:
    """A streaming client whose server refuses the credentials (``status``) to every request."""

    status: int = 401
    sent: int = 0

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        self.sent += 1
        return self.status, json.dumps({"error": {"message": "invalid api key", "code": self.status}}).encode()

    async def __aenter__(self) -> KeyRevoked:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


def test_the_watch_stops_at_the_first_refusal_of_the_credentials() -> None:
    watch = ServerWatch(limit=0)  # even a watch that never gives up on refused connections
    busy = replace(_record("http_status"), error=ErrorInfo("http_status", "busy", 503))
    watch.observe(busy)
    assert not watch.server_gone
    watch.observe(replace(busy, error=ErrorInfo("http_status", "forbidden", 403)))
    watch.observe(replace(busy, error=ErrorInfo("http_status", "unauthorized", 401)))
    assert watch.server_gone and watch.refused_with == 403  # the first refusal is the one reported
    watch.observe(_record(None))
    assert watch.server_gone  # a key that was refused stays refused
    assert watch.why_not_sent == "not sent: the server refused the credentials (HTTP 403)"
    assert ServerWatch(limit=3).why_not_sent == "not sent: the server stopped accepting connections"


async def test_after_a_401_the_rest_are_recorded_unsent(tiny_tokenizer_dir: Path) -> None:
    client = KeyRevoked()
    spec = _spec(tiny_tokenizer_dir)
    work = WorkQueue(spec, count=4)
    work.prepare()
    phase = Phase(client, spec, time.perf_counter(), ServerWatch(spec.abort_after_connection_errors), None, None,
                  "measured")
    while (request := await work.next()) is not None:
        await phase.send(request)
    errors = [r.error for r in phase.records]
    assert client.sent == 1
    assert errors[0] is not None and (errors[0].kind, errors[0].status_code) == ("http_status", 401)
    assert [(e.kind, e.message) for e in errors[1:] if e is not None] == [
        ("not_sent", "not sent: the server refused the credentials (HTTP 401)")] * 3
