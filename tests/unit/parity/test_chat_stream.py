from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from harness.load.client import ENDPOINTS, make_client, send_request
from harness.load.http import ConnectionPool
from harness.load.openai_stream import StreamState
from harness.load.prompts import PlannedRequest
from harness.parity.chat_stream import ChatStream, StreamedReply, ToolCallText, classify_server_error, stream_chat

from tests.support.bfcl_wire import ROLE, delta, finish, sse, streaming, tool_call_stream, usage

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def send(handler: Callable[[httpx.Request], Any], timeout_s: float = 5.0) -> StreamedReply:
    async with make_client("http://s", concurrency=1, timeout_s=timeout_s,
                           transport=httpx.MockTransport(handler)) as client:
        return await stream_chat(client, BODY, timeout_s)


async def test_split_tool_call_arguments_are_assembled_per_index() -> None:
    calls = [("spotify_play", json.dumps({"artist": "Taylor Swift", "duration": 20})),
             ("spotify_play", json.dumps({"artist": "Maroon 5", "duration": 15}))]
    reply = await send(lambda _: streaming(tool_call_stream(calls, fragment=3)))
    assert reply.error is None
    assert reply.tool_calls == tuple(ToolCallText(n, a) for n, a in calls)
    assert reply.finish_reason == "tool_calls" and reply.content == ""


async def test_one_delta_may_carry_fragments_of_several_calls() -> None:
    # vLLM's tool_choice="required" streaming emits every call that has news in one delta.
    pieces = sse(ROLE,
                 delta(tool_calls=[{"index": 0, "id": "a", "type": "function",
                                    "function": {"name": "f", "arguments": '{"x"'}},
                                   {"index": 1, "id": "b", "type": "function",
                                    "function": {"name": "g", "arguments": "{"}}]),
                 delta(tool_calls=[{"index": 1, "function": {"arguments": '"y": 2}'}},
                                   {"index": 0, "function": {"arguments": ": 1}"}}]),
                 finish("tool_calls"), usage(12), "[DONE]")
    reply = await send(lambda _: streaming(pieces))
    assert reply.tool_calls == (ToolCallText("f", '{"x": 1}'), ToolCallText("g", '{"y": 2}'))
    assert reply.output_tokens == 12


async def test_calls_without_index_and_object_arguments_are_taken_whole() -> None:
    pieces = sse(delta(tool_calls=[{"function": {"name": "f", "arguments": {"x": 1}}},
                                   {"function": {"name": "g", "arguments": "{}"}}]), finish(), "[DONE]")
    reply = await send(lambda _: streaming(pieces))
    assert reply.tool_calls == (ToolCallText("f", '{"x": 1}'), ToolCallText("g", "{}"))


async def test_ttft_skips_the_role_chunk_and_tpot_counts_usage_tokens() -> None:
    pieces = sse(ROLE, delta(content="a"), delta(content="b"), delta(content="c"), finish(), usage(9), "[DONE]")
    reply = await send(lambda _: streaming(pieces, gap_s=0.02))
    assert reply.content == "abc" and reply.output_tokens == 9
    assert reply.ttft_s is not None and reply.ttft_s >= 0.04  # role chunk at 20 ms, first text at 40 ms
    assert reply.tpot_s is not None
    assert reply.tpot_s == pytest.approx(0.04 / 8, rel=0.5)  # two 20 ms gaps over 9 - 1 tokens
    assert reply.e2e_s is not None and reply.e2e_s >= reply.ttft_s  # send to the end of the stream


async def test_without_usage_tokens_are_counted_by_chunk() -> None:
    reply = await send(lambda _: streaming(sse(ROLE, delta(content="a"), delta(content="b"), finish(), "[DONE]")))
    assert reply.output_tokens == 2


VLLM_NO_PARSER = {"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                                       "to be set", "type": "BadRequestError", "param": None, "code": 400}}
VLLM_NO_TEMPLATE = {"error": {"message": "As of transformers v4.44, default chat template is no longer allowed, so you "
                                         "must provide a chat template if the tokenizer does not define one.",
                              "type": "BadRequestError", "param": None, "code": 400}}
VLLM_GRAMMAR = {"error": {"message": "The provided JSON schema contains features not supported by xgrammar.",
                          "type": "BadRequestError", "param": None, "code": 400}}


@pytest.mark.parametrize(("body", "kind"), [(VLLM_NO_PARSER, "no_tool_parser"), (VLLM_NO_TEMPLATE, "no_chat_template"),
                                            (VLLM_GRAMMAR, "grammar_rejected"),
                                            ({"error": {"message": "model x not found"}}, "http_status"),
                                            ({"detail": "Not Found"}, "http_status")])
async def test_refusals_are_named_by_cause(body: dict[str, Any], kind: str) -> None:
    reply = await send(lambda _: httpx.Response(400, json=body))
    assert reply.error is not None and reply.error.kind == kind and reply.error.status_code == 400
    if kind == "no_tool_parser":
        assert "--enable-auto-tool-choice" in reply.error.explanation


async def test_an_error_event_inside_the_stream_is_classified() -> None:
    reply = await send(lambda _: streaming(sse(ROLE, VLLM_GRAMMAR, "[DONE]")))
    assert reply.error is not None and reply.error.kind == "grammar_rejected"
    reply = await send(lambda _: streaming(sse(ROLE, {"error": {"message": "engine died"}}, "[DONE]")))
    assert reply.error is not None and reply.error.kind == "stream"
    reply = await send(lambda _: streaming(sse(ROLE, {"object": "error", "message": "engine died"}, "[DONE]")))
    assert reply.error is not None and reply.error.kind == "stream" and reply.error.message == "engine died"


async def test_broken_streams_timeouts_and_refused_connections_are_errors_not_exceptions() -> None:
    reply = await send(lambda _: streaming([b"data: {not json\n\n"]))
    assert reply.error is not None and reply.error.kind == "stream"
    reply = await send(lambda _: streaming(sse(ROLE, delta(content="a"))))  # neither finish_reason nor [DONE]
    assert reply.error is not None and reply.error.kind == "stream"
    reply = await send(lambda _: streaming(sse(ROLE, delta(content="a"), finish())))  # finished, no [DONE]: fine
    assert reply.error is None and reply.content == "a"
    reply = await send(lambda _: streaming(sse(ROLE, delta(content="a"), "[DONE]"), gap_s=0.2), timeout_s=0.1)
    assert reply.error is not None and reply.error.kind == "timeout"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    reply = await send(refuse)
    assert reply.error is not None and reply.error.kind == "connection"


def test_classification_prefers_the_parser_cause() -> None:
    named = 'tool_choice="required" requires --tool-call-parser to be set'
    assert classify_server_error(named, 400, "http_status").kind == "no_tool_parser"
    assert classify_server_error("x" * 2000, 400, "http_status").message == "x" * 500


def arrivals(pieces: list[bytes], gap_s: float) -> list[tuple[bytes, float]]:
    """Each SSE event's payload with an arrival time ``gap_s`` after the previous one (send at 0)."""
    return [(piece.removeprefix(b"data:").strip(), gap_s * (i + 1)) for i, piece in enumerate(pieces)]


def test_parity_and_load_time_a_stream_with_the_same_record() -> None:
    # The parity sink runs the load client's StreamState, so both make the same RequestRecord, and TTFT / TPOT are
    # RequestRecord's properties on both paths: the role chunk is no token, tokens come from the usage chunk.
    calls = tool_call_stream([("f", json.dumps({"x": 1, "y": "two"}))], fragment=4)
    load = StreamState(ENDPOINTS["chat"].streamed_text, 0.0)
    parity = ChatStream(0.0, max_tokens=16)
    for data, at in arrivals(calls, gap_s=0.01):
        assert load.feed(data, at) == parity.feed(data, at)
    record = load.record(index=0, warmup=False, input_tokens=0, max_tokens=16, run_start=0.0, ended=1.0, error=None)
    reply = parity.reply(None, 1.0)
    assert reply.record == record and reply.error is None
    assert reply.ttft_s == record.ttft == pytest.approx(0.02)  # the first tool-call delta, after the role chunk
    assert reply.tpot_s == record.tpot
    assert record.tpot == pytest.approx((record.chunk_times[-1] - 0.02) / (record.output_tokens - 1))
    assert reply.output_tokens == record.output_tokens and reply.e2e_s == 1.0
    assert reply.tool_calls == (ToolCallText("f", json.dumps({"x": 1, "y": "two"})),)


async def test_parity_and_load_clients_count_the_same_stream_alike() -> None:
    pieces = sse(ROLE, delta(reasoning_content="hm"), delta(content="a"),
                 delta(tool_calls=[{"index": 0, "function": {"name": "f", "arguments": "{}"}}]), finish(), usage(7),
                 "[DONE]")
    request = PlannedRequest(index=0, warmup=False, api="chat", prompt="hi", input_tokens=1, max_tokens=8)
    async with make_client("http://s", concurrency=1, timeout_s=5,
                           transport=httpx.MockTransport(lambda _: streaming(pieces))) as client:
        record = await send_request(client, request, model="m", run_start=time.perf_counter(), timeout_s=5)
        reply = await stream_chat(client, BODY, 5)
    assert reply.record is not None and reply.error is None
    assert (reply.record.chunk_tokens, reply.record.output_tokens) == (record.chunk_tokens, 7) == ((1, 1, 1), 7)
    assert reply.record.prompt_tokens == record.prompt_tokens == 10


async def test_the_lean_connection_pool_carries_parity_requests() -> None:
    # Against a real http:// server parity uses the load client's ConnectionPool (kernel arrival stamps).
    body = b"".join(tool_call_stream([("f", '{"x": 1}')]))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_head = await reader.readuntil(b"\r\n\r\n")
        length = int(request_head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        assert json.loads(await reader.readexactly(length)) == BODY
        writer.write(head + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with make_client(f"http://127.0.0.1:{port}", concurrency=1, timeout_s=5) as client:
            assert isinstance(client, ConnectionPool)
            reply = await stream_chat(client, BODY, 5)
    finally:
        server.close()
    assert reply.error is None and reply.tool_calls == (ToolCallText("f", '{"x": 1}'),)
    assert reply.ttft_s is not None and reply.tpot_s is not None


async def test_odd_event_shapes_are_skipped_not_raised() -> None:
    pieces = sse(ROLE, {"choices": ["text"]}, {"choices": [{"index": 0, "delta": "x"}]},
                 delta(tool_calls=["call", {"index": 0, "function": "f"}]), delta(content="ok"), finish(), "[DONE]")
    reply = await send(lambda _: streaming(pieces))
    assert reply.error is None and reply.content == "ok" and reply.tool_calls == (ToolCallText("", ""),)
