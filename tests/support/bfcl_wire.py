"""Test instruments for the parity package: OpenAI-style SSE streams and an oracle server that answers BFCL items
with their ground truth, spoken through ``httpx.MockTransport`` so the real client path is exercised."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import httpx

from harness.bfcl import ToolSet, to_tools
from harness.parity import BfclItem
from harness.parity.run_result import ItemRecord, ParityRun, RunSettings, summarize_run


def sse(*events: Mapping[str, Any] | str) -> list[bytes]:
    return [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events]


def delta(**fields: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason: str = "stop") -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def usage(completion_tokens: int) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens,
                      "total_tokens": completion_tokens + 10}}


ROLE = delta(role="assistant", content="")


def tool_call_stream(calls: Sequence[tuple[str, str]], fragment: int = 7, reason: str = "tool_calls") -> list[bytes]:
    """A vLLM-shaped stream: role chunk, per call a header delta (id, name, first fragment) then argument fragments."""
    events: list[Mapping[str, Any] | str] = [ROLE]
    for index, (name, arguments) in enumerate(calls):
        pieces = [arguments[i:i + fragment] for i in range(0, len(arguments), fragment)] or [""]
        events.append(delta(tool_calls=[{"index": index, "id": f"chatcmpl-tool-{index}", "type": "function",
                                         "function": {"name": name, "arguments": pieces[0]}}]))
        events.extend(delta(tool_calls=[{"index": index, "function": {"arguments": p}}]) for p in pieces[1:])
    tokens = sum(len(a) // 4 + 3 for _, a in calls) or 1
    events += [finish(reason), usage(tokens), "[DONE]"]
    return sse(*events)


def content_stream(text: str, fragment: int = 9, reason: str = "stop") -> list[bytes]:
    pieces = [text[i:i + fragment] for i in range(0, len(text), fragment)]
    return sse(ROLE, *(delta(content=p) for p in pieces), finish(reason), usage(max(1, len(pieces))), "[DONE]")


async def paced(pieces: Sequence[bytes], gap_s: float = 0.0) -> AsyncIterator[bytes]:
    for piece in pieces:
        if gap_s:
            await asyncio.sleep(gap_s)
        yield piece


def streaming(pieces: Sequence[bytes], gap_s: float = 0.0) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=paced(pieces, gap_s))


def oracle_value(alternatives: list[Any], nested: bool = True) -> tuple[bool, Any]:
    """The first accepted value of a ground-truth parameter (``""`` means "may be left out").

    A dict parameter's accepted value (or a list of them) is itself a map from key to accepted values, one level
    deep: inside it values are literals, as BFCL's ``dict_checker`` compares them.
    """
    for value in alternatives:
        if value == "":
            continue
        if nested and isinstance(value, dict):
            return True, oracle_arguments(value, nested=False)
        if nested and isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return True, [oracle_arguments(v, nested=False) for v in value]
        return True, value
    return False, None


def oracle_arguments(parameters: Mapping[str, list[Any]], nested: bool = True) -> dict[str, Any]:
    arguments = {}
    for name, alternatives in parameters.items():
        present, value = oracle_value(alternatives, nested)
        if present:
            arguments[name] = value
    return arguments


def oracle_calls(item: BfclItem, tool_set: ToolSet) -> list[tuple[str, dict[str, Any]]]:
    """The ground truth as the calls a perfect model would send: sanitised names, first accepted values."""
    if item.ground_truth is None:
        return []
    sent = {original: sent for sent, original in tool_set.name_map.items()}
    calls = []
    for call in item.ground_truth:
        ((name, parameters),) = call.items()
        calls.append((sent.get(name, name), oracle_arguments(parameters)))
    return calls


def request_key(body: Mapping[str, Any]) -> str:
    tools = [t["function"]["name"] for t in body.get("tools", ())]
    return json.dumps([body["messages"], tools], sort_keys=True)


def oracle_handler(items: Sequence[BfclItem]) -> Callable[[httpx.Request], httpx.Response]:
    """A MockTransport handler that answers each item's request with its ground truth, in the request's format."""
    answers: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for item in items:
        tool_set = to_tools(item.prompt_functions)
        body = {"messages": [dict(m) for m in item.messages], "tools": list(tool_set.tools)}
        answers.setdefault(request_key(body), oracle_calls(item, tool_set))

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        calls = answers[request_key(body)]
        if "response_format" in body:
            return streaming(content_stream(json.dumps([{"name": n, "arguments": a} for n, a in calls])))
        if not calls:
            return streaming(content_stream("I am sorry, none of the functions can answer that."))
        return streaming(tool_call_stream([(name, json.dumps(arguments)) for name, arguments in calls]))

    return handle


def fake_run(verdicts: Mapping[str, bool], decoding: str = "free", error: str | None = None,
             tpot_ms: float = 10.0, calls: Mapping[str, Any] | None = None,
             e2e_ms: float | None = None, output_tokens: int | None = None) -> ParityRun:
    """A ParityRun whose items are ``{item id: correct}`` (the category is the id up to its last ``_``)."""
    items = [ItemRecord(id=item_id, category=item_id.rsplit("_", 1)[0], correct=correct, malformed=False,
                        no_call=False, calls=(calls or {}).get(item_id, ({"f": {"right": correct}},)),
                        ttft_ms=50.0, tpot_ms=tpot_ms, e2e_ms=e2e_ms, output_tokens=output_tokens)
             for item_id, correct in verdicts.items()]
    settings = RunSettings(decoding=decoding, max_tokens=64, concurrency=1, temperature=0.0, seed=0, timeout_s=5.0)
    return summarize_run(items, model="m", base_url="http://s", decoding=decoding, bfcl_version="test",
                         settings=settings, started_at="2026-01-01T00:00:00+00:00", wall_s=1.0, error=error)
