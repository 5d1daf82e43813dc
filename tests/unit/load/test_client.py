from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from harness.endpoint_access import Grant, Politeness, granted, origin_of
from harness.load import RequestRecord
from harness.load.client import PoliteClient, make_client, post_stream, send_request
from harness.load.http import ConnectionPool
from harness.load.prompts import PlannedRequest

COMPLETION = PlannedRequest(index=2, warmup=False, api="completions", prompt=(5, 6, 7), input_tokens=3,
                            max_tokens=4)
CHAT = PlannedRequest(index=0, warmup=True, api="chat", prompt="hello there", input_tokens=2, max_tokens=3,
                      temperature=0.5, ignore_eos=False)


def sse(*events: dict[str, Any] | str) -> list[bytes]:
    return [f"data: {e if isinstance(e, str) else json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events]


def text_chunk(text: str, completion_tokens: int | None = None, prompt_tokens: int = 3) -> dict[str, Any]:
    chunk: dict[str, Any] = {"object": "text_completion", "choices": [{"index": 0, "text": text}]}
    if completion_tokens is not None:
        chunk["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    return chunk


def usage_chunk(completion_tokens: int, prompt_tokens: int = 3) -> dict[str, Any]:
    return {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


async def paced(pieces: list[bytes], gap_s: float = 0.0, fail: Exception | None = None) -> AsyncIterator[bytes]:
    for piece in pieces:
        if gap_s:
            await asyncio.sleep(gap_s)
        yield piece
    if fail is not None:
        raise fail


Handler = Callable[[httpx.Request], Any]


async def send(handler: Handler, request: PlannedRequest = COMPLETION, timeout_s: float = 5.0) -> RequestRecord:
    async with make_client("http://fake", concurrency=1, timeout_s=timeout_s,
                           transport=httpx.MockTransport(handler)) as client:
        return await send_request(client, request, model="m", run_start=time.perf_counter(), timeout_s=timeout_s)


async def test_completions_body_and_multi_token_chunks() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"".join(sse(
            text_chunk(" a", 1), text_chunk(" b c d", 4), text_chunk("", 4), usage_chunk(4), "[DONE]")))

    record = await send(handler)
    assert seen[0].url.path == "/v1/completions"
    body = json.loads(seen[0].content)
    assert body == {"model": "m", "prompt": [5, 6, 7], "max_tokens": 4, "temperature": 0.0, "ignore_eos": True,
                    "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    assert record.ok, record.error
    assert record.chunk_tokens == (1, 3) and len(record.chunk_times) == 2
    assert record.output_tokens == 4 and record.prompt_tokens == 3
    assert (record.index, record.warmup, record.input_tokens, record.max_tokens) == (2, False, 3, 4)
    assert 0 <= record.send_time <= record.end_time


async def test_chat_body_skips_the_role_chunk() -> None:
    seen: list[httpx.Request] = []
    role = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 0}}

    def chat(content: str, n: int) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"content": content}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": n}}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"".join(sse(role, chat("x", 1), chat("y z", 3), usage_chunk(3, 9),
                                                        "[DONE]")))

    record = await send(handler, CHAT)
    body = json.loads(seen[0].content)
    assert seen[0].url.path == "/v1/chat/completions"
    assert body["messages"] == [{"role": "user", "content": "hello there"}]
    assert (body["temperature"], body["ignore_eos"], body["max_tokens"]) == (0.5, False, 3)
    assert record.ok and record.warmup
    assert record.chunk_tokens == (1, 2) and record.output_tokens == 3 and record.prompt_tokens == 9


async def test_without_continuous_usage_each_text_chunk_is_one_token() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"".join(sse(
            text_chunk(" a"), text_chunk(""), text_chunk(" b"), usage_chunk(5), "[DONE]")))

    record = await send(handler)
    assert record.ok and record.chunk_tokens == (1, 1)
    assert record.output_tokens == 5  # the final usage chunk is the truth


async def test_chunk_times_follow_arrival_and_lines_split_on_newline_only() -> None:
    pieces = sse(text_chunk(" a\u2028b", 1), text_chunk(" c", 2), text_chunk(" d", 3), "[DONE]")
    # cut the second event mid-line: the parser must join pieces
    pieces = [pieces[0], pieces[1][:10], pieces[1][10:], pieces[2], pieces[3]]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=paced(pieces, gap_s=0.02))

    record = await send(handler)
    assert record.ok, record.error
    assert record.chunk_tokens == (1, 1, 1)
    assert record.ttft is not None and record.ttft >= 0.015
    assert all(gap >= 0.015 for gap in record.itl)
    assert record.e2el is not None and record.end_time - record.send_time >= record.e2el


@pytest.mark.parametrize(("response", "kind", "status", "message"), [
    (httpx.Response(500, json={"error": {"message": "engine died", "code": 500}}), "http_status", 500,
     "engine died"),
    (httpx.Response(404, text="not here"), "http_status", 404, "not here"),
    (httpx.Response(200, content=b"".join(sse(text_chunk(" a", 1)))), "stream", None, "without \\[DONE\\]"),
    (httpx.Response(200, content=b"".join(sse(usage_chunk(0), "[DONE]"))), "empty", None, "single token"),
    (httpx.Response(200, content=b"data: {not json\n\n"), "stream", None, "malformed"),
    (httpx.Response(200, content=b"".join(sse(text_chunk(" a", 1), {"error": {"message": "oom", "code": 400}}))),
     "stream", 400, "oom"),
    (httpx.Response(200, content=b"".join(sse(text_chunk(" a", 1), {"object": "error", "message": "engine died",
                                                                     "code": 500}))), "stream", 500, "^engine died$"),
    (httpx.Response(404, json={"detail": "Not Found"}), "http_status", 404, "^Not Found$"),
])
async def test_failures_are_records(response: httpx.Response, kind: str, status: int | None, message: str) -> None:
    record = await send(lambda request: response)
    assert record.error is not None
    assert record.error.kind == kind and record.error.status_code == status
    assert re.search(message, record.error.message)


async def test_refused_connection_and_broken_stream() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    refused = await send(refuse)
    assert refused.error is not None and refused.error.kind == "connection"

    def break_mid_stream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=paced(sse(text_chunk(" a", 1)), fail=httpx.ReadError("reset")))

    broken = await send(break_mid_stream)
    assert broken.error is not None and broken.error.kind == "stream"
    assert broken.chunk_tokens == (1,)  # what arrived before the break is kept


async def test_timeout_is_a_record() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=paced(sse(text_chunk(" a", 1), "[DONE]"), gap_s=60.0))

    started = time.perf_counter()
    record = await send(slow, timeout_s=0.05)
    assert record.error is not None and record.error.kind == "timeout"
    assert time.perf_counter() - started < 30  # ended by the timeout, not by the server's 60 s gap


async def test_cancellation_propagates() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        return httpx.Response(200)

    task = asyncio.create_task(send(hang))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_standard_library_decoder_gives_the_same_records(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.load.openai_stream as stream_module

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"".join(sse(
            text_chunk(" a", 1), text_chunk(" b c d", 4), usage_chunk(4), "[DONE]")))

    fast = await send(handler)
    monkeypatch.setattr(stream_module, "decode_event", json.loads)
    slow = await send(handler)
    assert (fast.chunk_tokens, fast.output_tokens, fast.prompt_tokens) == (slow.chunk_tokens, slow.output_tokens,
                                                                         slow.prompt_tokens) == ((1, 3), 4, 3)
    malformed = await send(lambda request: httpx.Response(200, content=b'data: {"a": 1} trailing\n\n'))
    assert malformed.error is not None and malformed.error.kind == "stream"


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b"".join(sse(text_chunk(" a", 1), "[DONE]")))


def test_a_granted_politeness_wraps_the_client_for_its_origin_only() -> None:
    politeness = Politeness(3)
    with granted([Grant(origin_of("http://deployment.test:8000"), politeness=politeness)]):
        polite = make_client("http://deployment.test:8000", concurrency=1, timeout_s=5)
        other = make_client("http://127.0.0.1:8000", concurrency=1, timeout_s=5)
    assert isinstance(polite, PoliteClient) and isinstance(polite.inner, ConnectionPool)
    assert polite.politeness is politeness and isinstance(other, ConnectionPool)  # another origin: not held back


async def test_requests_past_the_budget_are_recorded_unsent() -> None:
    arrived: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        arrived.append(request)
        return answer(request)

    politeness = Politeness(2)
    with granted([Grant(origin_of("http://fake"), politeness=politeness)]):
        async with make_client("http://fake", concurrency=1, timeout_s=5.0,
                               transport=httpx.MockTransport(handler)) as client:
            records = [await send_request(client, COMPLETION, model="m", run_start=time.perf_counter(), timeout_s=5.0)
                       for _ in range(3)]
            error = await post_stream(client, "/v1/completions", b"{}", lambda data, at: True, 5.0)
    assert [r.ok for r in records] == [True, True, False] and len(arrived) == 2 and politeness.sent == 2
    unsent = records[2].error
    assert unsent is not None and unsent.kind == "not_sent" and unsent.status_code is None
    assert unsent.message == "not sent: the request budget of 2 is spent"
    assert error is not None and error.kind == "not_sent"


async def test_a_429_with_retry_after_holds_the_next_request_back() -> None:
    arrivals: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        arrivals.append(time.monotonic())
        if len(arrivals) == 1:
            return httpx.Response(429, headers={"Retry-After": "0.2"}, json={"error": {"message": "slow down"}})
        return answer(request)

    politeness = Politeness(3)
    with granted([Grant(origin_of("http://fake"), politeness=politeness)]):
        async with make_client("http://fake", concurrency=1, timeout_s=5.0,
                               transport=httpx.MockTransport(handler)) as client:
            throttled = await send_request(client, COMPLETION, model="m", run_start=time.perf_counter(), timeout_s=5.0)
            after = await send_request(client, COMPLETION, model="m", run_start=time.perf_counter(), timeout_s=5.0)
    assert throttled.error is not None and throttled.error.kind == "http_status"
    assert throttled.error.status_code == 429 and "slow down" in throttled.error.message
    assert after.ok and arrivals[1] - arrivals[0] >= 0.15
    assert (politeness.throttled, politeness.sent) == (1, 2)
