from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.bfcl import BfclUnavailable
from harness.parity import MultiTurnItem, RunSettings, load_multi_turn_items
from harness.parity.multi_turn_result import MultiTurnRun, read_multi_turn_run, write_multi_turn_run
from harness.parity.multi_turn_run import bfcl_step_limit, run_multi_turn
from harness.parity.multi_turn_worker import BfclWorker

from tests.support.bfcl_oracle import OracleServer
from tests.support.bfcl_wire import content_stream, streaming, tool_call_stream
from tests.support.processes import live_pids

BASE = load_multi_turn_items(["multi_turn_base"], limit=10, seed=0)
MORE_FUNCTIONS = "I have updated some more functions you can choose from. What about now?"


async def run(handler: Callable[[httpx.Request], Any], items: list[MultiTurnItem],
              **kwargs: Any) -> MultiTurnRun:
    settings = RunSettings(concurrency=kwargs.pop("concurrency", 4), max_tokens=64, timeout_s=10)
    return await run_multi_turn("http://s", "m", items, settings, transport=httpx.MockTransport(handler), **kwargs)


WORKER = "from harness.parity.multi_turn_worker import serve_worker; serve_worker()"


def worker_pids() -> set[int]:
    """Live BFCL worker processes started by this (test) process."""
    pids = set()
    for pid in live_pids(WORKER):
        try:
            parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue  # exited while we looked
        if parent == str(os.getpid()):
            pids.add(pid)
    return pids


async def test_the_ground_truth_replayed_turn_by_turn_scores_every_entry_of_a_base_sample() -> None:
    server = OracleServer(BASE)
    result = await run(server, BASE)
    assert [(r.id, r.correct, r.error_kind) for r in result.entries] == [(i.id, True, None) for i in BASE]
    assert result.accuracy == 1.0 and result.error is None
    assert result.categories["multi_turn_base"].correct == 10
    for item, record in zip(BASE, result.entries, strict=True):
        # All of a turn's calls in one step, then a reply without a call ends the turn.
        assert [sum(map(len, steps)) for steps in record.calls] == [len(turn) for turn in item.ground_truth]
        assert record.turns == len(item.turns) and record.requests == 2 * len(item.turns) - sum(
            not turn for turn in item.ground_truth)
    assert sum(r.requests for r in result.entries) == len(server.requests)
    body = server.requests[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64 and body["seed"] == 0
    assert body["stream"] is True and body["tool_choice"] == "auto" and "response" not in body["tools"][0]["function"]


@pytest.mark.parametrize("category", ["multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"])
async def test_the_other_categories_replayed_one_call_per_step_score_every_entry(category: str) -> None:
    items = load_multi_turn_items([category], limit=3, seed=0)
    result = await run(OracleServer(items, calls_per_step=1), items)
    assert [(r.correct, r.error_kind) for r in result.entries] == [(True, None)] * 3


async def test_a_turn_of_more_calls_than_steps_allowed_fails_as_bfcl_fails_it() -> None:
    # The two long_context entries with 34 calls in a turn: one call per step passes BFCL's 20-step limit. Where
    # that turn is not the last, BFCL fails the entry as force-terminated; where it is the last, the turn counts
    # match and BFCL checks the half-done state.
    ids = {"multi_turn_long_context_38", "multi_turn_long_context_46"}
    items = [i for i in load_multi_turn_items(["multi_turn_long_context"]) if i.id in ids]
    result = await run(OracleServer(items, calls_per_step=1), items)
    assert [(r.id, r.error_kind, r.turns, len(r.calls[0])) for r in result.entries] == [
        ("multi_turn_long_context_38", "multi_turn:force_terminated", 1, 21),
        ("multi_turn_long_context_46", "multi_turn:instance_state_mismatch", 1, 21)]
    result = await run(OracleServer(items), items)
    assert all(r.correct for r in result.entries)


async def test_held_back_functions_come_back_with_bfcls_message_and_calls_get_their_results() -> None:
    (item,) = load_multi_turn_items(["multi_turn_miss_func"], limit=1, seed=0)
    server = OracleServer([item], calls_per_step=1)
    result = await run(server, [item])
    assert result.entries[0].correct
    ((turn, docs),) = item.missed_functions.items()
    missed = {doc["name"] for doc in docs}
    for body in server.requests:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        offered = {tool["function"]["name"] for tool in body["tools"]}
        assert (missed <= offered) == (len(users) > turn)
        assert (users[turn:turn + 1] == [MORE_FUNCTIONS]) == (len(users) > turn)
    # Each call is answered by a tool message carrying the server's call id, right after the assistant message.
    later = next(b["messages"] for b in server.requests if b["messages"][-1]["role"] == "tool")
    assert later[-2]["tool_calls"][0]["id"] == later[-1]["tool_call_id"] == "chatcmpl-tool-0"
    assert later[-2]["content"] is None and isinstance(later[-1]["content"], str)


async def test_no_call_at_all_fails_with_bfcls_empty_turn_reason(tmp_path: Path) -> None:
    items = BASE[:3]
    result = await run(lambda _: streaming(content_stream("I would rather not.")), items)
    for item, record in zip(items, result.entries, strict=True):
        assert not record.correct and record.error_kind == "multi_turn:empty_turn_model_response"
        assert record.error is not None and record.error.startswith("Model response list is empty for turn")
        assert record.turns == record.requests == len(item.turns)
        assert record.calls == ((),) * len(item.turns)
    assert result.accuracy == 0.0 and result.error is None
    assert result.error_counts == {"multi_turn:empty_turn_model_response": 3}
    write_multi_turn_run(result, tmp_path / "mt.json")
    assert read_multi_turn_run(tmp_path / "mt.json") == result


async def test_a_turn_past_the_step_limit_force_terminates_the_entry() -> None:
    item = next(i for i in BASE if "GorillaFileSystem" in i.involved_classes and len(i.turns) > 1)
    result = await run(lambda _: streaming(tool_call_stream([("ls", "{}")])), [item], max_steps=2)
    (record,) = result.entries
    assert record.error_kind == "multi_turn:force_terminated" and not record.correct
    assert record.turns == 1 and record.requests == 3 and len(record.calls[0]) == 3  # BFCL: count > limit
    assert result.categories["multi_turn_base"].force_terminated == 1
    assert inspect.signature(run_multi_turn).parameters["max_steps"].default == bfcl_step_limit() == 20


async def test_undecodable_calls_end_the_turn_and_failed_requests_end_the_entry() -> None:
    result = await run(lambda _: streaming(tool_call_stream([("ls", '{"a": tru')])), BASE[:1])
    (record,) = result.entries
    assert record.decode_failures == record.turns == len(BASE[0].turns)
    assert record.error_kind == "multi_turn:empty_turn_model_response"
    result = await run(lambda _: httpx.Response(500, json={"error": {"message": "boom"}}), BASE[:2])
    assert [(r.error_kind, r.turns, r.requests) for r in result.entries] == [("http_status", 1, 1)] * 2
    assert result.error_kind == "http_status" and result.error and "every entry ended" in result.error


async def test_a_server_without_a_tool_parser_stops_the_run() -> None:
    message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    result = await run(lambda _: httpx.Response(400, json={"error": {"message": message}}), BASE, concurrency=1)
    assert len(result.entries) == 1 and result.error_kind == "no_tool_parser"
    assert result.error is not None and "--tool-call-parser <name>" in result.error


async def test_the_worker_process_is_gone_after_a_run_a_failure_and_a_cancellation() -> None:
    seen: set[int] = set()

    def failing_at(request_number: int | None) -> Callable[[httpx.Request], httpx.Response]:
        server = OracleServer(BASE[:2])

        def handle(request: httpx.Request) -> httpx.Response:
            seen.update(worker_pids())
            if len(server.requests) == request_number:
                raise RuntimeError("the transport broke")
            return server(request)

        return handle

    await run(failing_at(None), BASE[:2])
    with pytest.raises(RuntimeError, match="transport broke"):
        await run(failing_at(3), BASE[:2])
    reached = asyncio.Event()

    async def hanging(request: httpx.Request) -> httpx.Response:
        seen.update(worker_pids())
        reached.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    task = asyncio.create_task(run(hanging, BASE[:2]))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen) == 3 and not seen & set(live_pids(WORKER))


async def test_a_class_bfcl_cannot_load_stops_the_run_before_any_request() -> None:
    with pytest.raises(BfclUnavailable, match="NoSuchAPI"):
        async with BfclWorker("harness_test", ["NoSuchAPI"]):
            pass
    assert not worker_pids()
