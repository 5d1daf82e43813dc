from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from harness.parity import BfclItem, ParityRun, RunSettings, load_items
from harness.parity.bfcl_run import run_bfcl, server_root

from tests.support.bfcl_wire import content_stream, oracle_handler, streaming, tool_call_stream

ITEMS = load_items(["simple_python", "parallel", "irrelevance"], limit=4, seed=0)


async def run(handler: Callable[[httpx.Request], Any], items: list[BfclItem] = ITEMS, decoding: str = "free",
              **kwargs: Any) -> ParityRun:
    settings = RunSettings(decoding=decoding, concurrency=kwargs.pop("concurrency", 3), max_tokens=64, timeout_s=5,
                           **kwargs)
    return await run_bfcl("http://s", "m", items, settings, transport=httpx.MockTransport(handler))


def error_response(message: str) -> httpx.Response:
    return httpx.Response(400, json={"error": {"message": message, "type": "BadRequestError", "code": 400}})


async def test_request_body_follows_bfcl_and_the_decoding() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return streaming(content_stream("no idea"))

    result = await run(handler, ITEMS[:1], extra_body={"chat_template_kwargs": {"enable_thinking": False}}, seed=3)
    (body,) = bodies
    assert body["model"] == "m" and body["messages"] == [dict(m) for m in ITEMS[0].messages]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64 and body["seed"] == 3
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tool_choice"] == "auto" and body["tools"][0]["type"] == "function"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert result.settings.seed == 3
    assert result.settings.extra_body == {"chat_template_kwargs": {"enable_thinking": False}}
    assert result.items[0].no_call and not result.items[0].correct


async def test_a_server_without_a_tool_parser_stops_the_run_with_the_cause() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return error_response('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')

    result = await run(handler, concurrency=1)
    assert calls == 1 and len(result.items) == 1
    assert result.error_kind == "no_tool_parser"
    assert result.error is not None and "--tool-call-parser <name>" in result.error


async def test_a_model_without_a_chat_template_stops_the_run() -> None:
    result = await run(lambda _: error_response("default chat template is no longer allowed, so you must provide a "
                                                "chat template if the tokenizer does not define one."))
    assert result.error_kind == "no_chat_template" and result.error and "--chat-template" in result.error
    assert len(result.items) <= 3  # only requests already in flight


async def test_rejected_schemas_cost_their_items_only() -> None:
    rejected = {ITEMS[0].messages[0]["content"]}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body["messages"][0]["content"] in rejected:
            return error_response("The provided JSON schema contains features not supported by xgrammar.")
        return streaming(content_stream("[]"))

    result = await run(handler, decoding="json_schema")
    assert result.error is None
    kinds = [item.error_kind for item in result.items]
    assert kinds.count("grammar_rejected") == 1 and not result.items[0].correct
    assert result.error_counts == {"grammar_rejected": 1}
    assert result.categories["irrelevance"].accuracy == 1.0


async def test_a_run_where_every_request_fails_says_so() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    result = await run(refuse)
    assert len(result.items) == len(ITEMS) and result.request_error_rate == 1.0
    assert result.error_kind == "connection" and result.error and result.error.startswith("every request failed")
    assert result.overall_accuracy == 0.0


async def test_model_garbage_is_counted_never_raised() -> None:
    answers = iter([
        tool_call_stream([("calculate_triangle_area", '{"base": 10, "height": ')]),  # cut JSON
        tool_call_stream([("no_such_function", "{}")]),
        tool_call_stream([("calculate_triangle_area", '["a list"]')]),
        tool_call_stream([("x", "{}")], reason="length"),
    ])
    result = await run(lambda _: streaming(next(answers)), ITEMS[:4], concurrency=1)
    kinds = [item.error_kind for item in result.items]
    assert kinds == ["malformed_json", "unknown_function", "wrong_shape", "truncated"]
    assert [item.malformed for item in result.items] == [True, False, True, False]
    assert not any(item.correct for item in result.items)
    assert result.malformed_rate == 0.5 and result.error is None


async def test_a_truncated_text_answer_to_an_irrelevance_item_is_right_as_bfcl_scores_it() -> None:
    irrelevant = [item for item in ITEMS if item.wants_no_call][:1]
    text = content_stream("I would need to look that up and then " * 20, reason="length")
    result = await run(lambda _: streaming(text), irrelevant, concurrency=1)
    (item,) = result.items
    assert item.correct and item.no_call and item.error_kind is None and item.finish_reason == "length"


async def test_required_skips_the_categories_it_cannot_answer() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return oracle_handler(ITEMS)(request)

    result = await run(handler, decoding="required")
    assert result.skipped_categories == ("irrelevance",) and "irrelevance" not in result.categories
    assert {body["tool_choice"] for body in seen} == {"required"} and len(seen) == 8
    assert result.overall_accuracy == 1.0
    only_irrelevance = await run(handler, load_items(["irrelevance"], limit=2), decoding="required")
    assert only_irrelevance.error is not None and "cannot serve" in only_irrelevance.error


async def test_concurrency_is_bounded() -> None:
    active = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return streaming(content_stream("[]"))

    items = load_items(["simple_python"], limit=12)
    result = await run(handler, items, decoding="json_schema", concurrency=4)
    assert len(result.items) == 12 and peak == 4
    assert [item.id for item in result.items] == [item.id for item in items]


def test_server_root_and_bad_arguments() -> None:
    # a base URL with or without /v1 reaches the same server: the client adds /v1/chat/completions itself
    assert server_root("http://h:8000") == server_root("http://h:8000/") == server_root("http://h:8000/v1/") \
        == "http://h:8000"
    with pytest.raises(ValueError, match="choose from"):
        asyncio.run(run_bfcl("http://s", "m", ITEMS, RunSettings(decoding="guided")))
    with pytest.raises(ValueError, match="greater than 0"):
        RunSettings(concurrency=0)
