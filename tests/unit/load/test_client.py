from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from harness.load import RequestRecord
from harness.load.client import make_client, send_request
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
