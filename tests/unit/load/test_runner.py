from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from itertools import pairwise
from pathlib import Path

import httpx
import numpy as np
import pytest
from tokenizers import Tokenizer, models

from harness.config import RandomWorkload
from harness.config.load import LoadPattern
from harness.load import LoadSpec, run_load
from harness.load.arrivals import arrival_times


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, **{f"w{i}": i + 1 for i in range(30)}}, unk_token="[UNK]"))
    tokenizer.add_special_tokens(["[UNK]", "<s>"])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


def _spec(tokenizer_dir: Path, concurrency: int, **workload: object) -> LoadSpec:
    fields: dict[str, object] = dict(input_tokens=8, output_tokens=3, num_requests=6, warmup_requests=2)
    fields.update(workload)
    return LoadSpec(base_url="http://fake", model="m", workload=RandomWorkload(**fields),  # type: ignore[arg-type]
                    concurrency=concurrency, tokenizer_dir=tokenizer_dir, request_timeout_s=5.0)


class StreamingServer:
    """A MockTransport handler that streams max_tokens one-token chunks and tracks requests in flight."""

    def __init__(self, gap_s: float = 0.005) -> None:
        self.gap_s = gap_s
        self.in_flight = 0
        self.peak = 0
        self.bodies: list[dict[str, object]] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        return httpx.Response(200, content=self._events(int(body["max_tokens"])))

    async def _events(self, tokens: int) -> AsyncIterator[bytes]:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        for n in range(1, tokens + 1):
            await asyncio.sleep(self.gap_s)
            chunk = {"choices": [{"index": 0, "text": " x"}], "usage": {"prompt_tokens": 8, "completion_tokens": n}}
            yield f"data: {json.dumps(chunk)}\n\n".encode()
        # before [DONE]: the client stops reading there, so code after this yield may never run
        self.in_flight -= 1
        yield b"data: [DONE]\n\n"


async def test_warmup_then_measured_at_fixed_concurrency(tokenizer_dir: Path) -> None:
    server = StreamingServer()
    marks: list[int] = []

    async def on_measure_start() -> None:
        marks.append(len(server.bodies))

    spec = _spec(tokenizer_dir, concurrency=4)
    result = await run_load(spec, transport=httpx.MockTransport(server), on_measure_start=on_measure_start)

    warm = [r for r in result.records if r.warmup]
    measured = [r for r in result.records if not r.warmup]
    assert len(warm) == 2 and len(measured) == spec.workload.requests_for(4) == 8
    assert [r.index for r in measured] == list(range(8))
    assert all(r.ok for r in result.records), [r.error for r in result.records]
    assert all(r.output_tokens == r.max_tokens for r in result.records)
    assert server.peak == 4
    assert marks == [2]  # the hook ran after both warm-ups and before any measured request
    assert max(r.end_time for r in warm) <= min(r.send_time for r in measured)
    expected = max(r.end_time for r in measured) - min(r.send_time for r in measured)
    assert result.duration_s == pytest.approx(expected)
    assert all(body["model"] == "m" and body["stream"] for body in server.bodies)


async def test_concurrency_one_is_sequential(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.001)
    result = await run_load(_spec(tokenizer_dir, concurrency=1, num_requests=3, warmup_requests=0),
                            transport=httpx.MockTransport(server))
    assert server.peak == 1 and len(result.records) == 3
    records = result.records
    assert all(a.end_time <= b.send_time for a, b in pairwise(records))


async def test_dead_server_stops_sending(tokenizer_dir: Path) -> None:
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    spec = _spec(tokenizer_dir, concurrency=2, num_requests=40)
    result = await run_load(spec, transport=httpx.MockTransport(refuse))
    kinds = [r.error.kind for r in result.records if r.error is not None]
    assert len(kinds) == len(result.records) == 42
    assert set(kinds) == {"connection", "not_sent"}
    assert kinds.count("connection") == len(attempts) < 12  # stopped after 8 in a row (+ those in flight)
    assert result.duration_s >= 0


async def test_abort_can_be_turned_off(tokenizer_dir: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    spec = _spec(tokenizer_dir, concurrency=2, num_requests=20)
    spec = LoadSpec(**{**{f: getattr(spec, f) for f in spec.__slots__}, "abort_after_connection_errors": 0})
    result = await run_load(spec, transport=httpx.MockTransport(refuse))
    assert {r.error.kind for r in result.records if r.error is not None} == {"connection"}


async def test_http_errors_do_not_abort(tokenizer_dir: Path) -> None:
    calls = 0

    def flaky(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(500, json={"error": {"message": "nope", "code": 500}})

    result = await run_load(_spec(tokenizer_dir, concurrency=3, num_requests=12), transport=httpx.MockTransport(flaky))
    assert calls == 14
    assert {r.error.kind for r in result.records if r.error is not None} == {"http_status"}


def _paced(tokenizer_dir: Path, concurrency: int, pattern: LoadPattern, **workload: object) -> LoadSpec:
    spec = _spec(tokenizer_dir, concurrency, **workload)
    return dataclasses.replace(spec, pattern=pattern, progress=False)


async def test_request_rate_follows_the_seeded_schedule(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.001)
    pattern = LoadPattern(request_rate=40.0)
    spec = _paced(tokenizer_dir, 10, pattern, num_requests=12, warmup_requests=0, seed=5)
    result = await run_load(spec, transport=httpx.MockTransport(server))
    records = sorted(result.records, key=lambda r: r.due_time or 0.0)
    planned = arrival_times(pattern, 5, count=spec.workload.requests_for(10))
    due = np.asarray([r.due_time for r in records], dtype=float)
    assert len(records) == len(planned) == 20
    # Each request is stamped with its seeded arrival (on the run's clock) and never sent before it; how late a busy
    # machine sends it is the lateness the record keeps, not something this test can bound.
    assert np.allclose(due - due[0], planned - planned[0], atol=1e-9)
    assert all(r.send_time >= r.due_time - 0.001 for r in records if r.due_time is not None)


async def test_concurrency_caps_a_request_rate(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.01)
    spec = _paced(tokenizer_dir, 2, LoadPattern(request_rate=500.0), num_requests=10, warmup_requests=0)
    result = await run_load(spec, transport=httpx.MockTransport(server))
    assert server.peak == 2 and all(r.ok for r in result.records)


async def test_duration_bound_sends_until_the_deadline(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.004)
    spec = _paced(tokenizer_dir, 2, LoadPattern(duration_s=0.4), num_requests=4, warmup_requests=1)
    result = await run_load(spec, transport=httpx.MockTransport(server))
    measured = [r for r in result.records if not r.warmup]
    first = min(r.send_time for r in measured)
    assert len(measured) > spec.workload.requests_for(2)  # the count no longer bounds the run
    # The deadline is checked before each send, so past it each user sends at most the request it had begun.
    assert sum(r.send_time > first + 0.4 for r in measured) <= spec.concurrency
    assert len({r.index for r in measured}) == len(measured)  # prompts planned in batches never repeat


async def test_ramp_up_staggers_users(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.12)  # 0.36 s per request: each user's first send comes before any second
    spec = _paced(tokenizer_dir, 3, LoadPattern(ramp_up_s=0.3), num_requests=3, warmup_requests=0)
    result = await run_load(spec, transport=httpx.MockTransport(server))
    sends = sorted(r.send_time for r in result.records)
    # Run-clock times: the users start 0.1 s apart, so none sends before its offset (a busy machine only delays).
    assert sends[1] >= 0.1 - 0.001 and sends[2] >= 0.2 - 0.001


async def test_later_repeats_skip_warmup_and_are_stamped(tokenizer_dir: Path) -> None:
    server = StreamingServer(gap_s=0.001)
    spec = dataclasses.replace(_spec(tokenizer_dir, 2), warmup=False, repeat=2, progress=False)
    result = await run_load(spec, transport=httpx.MockTransport(server))
    assert len(result.records) == 6 and not any(r.warmup for r in result.records)
    assert {r.repeat for r in result.records} == {2}
