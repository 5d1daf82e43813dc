"""Drive BFCL multi-turn entries turn by turn over one OpenAI-compatible server: items in, a ``MultiTurnRun`` out.

The conversation follows BFCL's FC inference loop (``BaseHandler.inference_multi_turn_FC`` with the OpenAI
completions handler): per turn, held-back functions come back with BFCL's "I have updated some more functions"
message, the user messages are appended, then each step sends the whole history, appends the assistant message,
turns its tool calls into call strings with BFCL's ``convert_to_function_call`` and executes them in BFCL's
classes, answering each call with a ``tool`` message. A reply without a call, or whose calls do not decode, ends
the turn; more than ``max_steps`` executing steps in one turn ends the entry (BFCL then fails it as
force-terminated). Requests are streamed like the single-turn run's (``bfcl_run``): temperature 0, a seed, a
token cap, the tools converted by ``harness.bfcl.tools.to_tools``.

BFCL executes calls with ``eval`` and keeps each entry's class instances in module globals, so execution and
BFCL's ``multi_turn_checker`` run in a child process of the run's own (``BfclWorker``): the harness never evals
model output, and no state survives a run. A failed request ends its entry as data; a server without a
tool-call parser or chat template stops the run, as in ``bfcl_run``.

The records are ``multi_turn_result``'s; the worker that executes and checks is ``multi_turn_worker``'s.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.bfcl.package import bfcl
from harness.bfcl.tools import ToolSet, to_tools
from harness.load.client import StreamingClient, make_client, post_stream
from harness.parity.bfcl_run import RUN_STOPPERS, server_root
from harness.parity.chat_stream import (
    CHAT_PATH,
    ChatStream,
    RequestError,
    StreamedReply,
    ToolCallAssembly,
)
from harness.parity.decoding import get_decoding
from harness.parity.multi_turn_data import MultiTurnItem
from harness.parity.multi_turn_result import MultiTurnRecord, MultiTurnRun, summarize_multi_turn
from harness.parity.multi_turn_worker import BfclWorker, EntryVerdict, bfcl_entry
from harness.parity.run_result import RunSettings
from harness.store import now_iso

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class _Loop:
    """The parts of BFCL's FC inference loop the conversation reuses."""

    convert_to_function_call: Callable[[Any], list[str]]
    more_functions_message: str
    step_limit: int


@functools.cache
def _loop() -> _Loop:
    bfcl()  # first: the stand-ins must be in sys.modules before any bfcl_eval import
    from bfcl_eval.constants.default_prompts import (
        DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        MAXIMUM_STEP_LIMIT,
    )
    from bfcl_eval.model_handler.utils import convert_to_function_call
    return _Loop(convert_to_function_call, DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC, MAXIMUM_STEP_LIMIT)


def bfcl_step_limit() -> int:
    """BFCL's ``MAXIMUM_STEP_LIMIT``: executing steps allowed per turn before the entry is force-terminated."""
    return _loop().step_limit


def user_messages(item: MultiTurnItem, turn: int) -> list[dict[str, Any]]:
    """What BFCL appends at the start of ``turn``: its messages, or on a turn that brings held-back functions
    back (which has none), BFCL's "I have updated some more functions you can choose from" message."""
    if turn in item.missed_functions:
        return [{"role": "user", "content": _loop().more_functions_message}]
    return [dict(message) for message in item.turns[turn]]


@dataclass(slots=True)
class _CallIds(ToolCallAssembly):
    """The assembly that also keeps each call's id: BFCL answers every call with a ``tool`` message naming it."""

    ids: dict[int, str] = field(default_factory=dict)

    def _add_call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        index = index if isinstance(index, int) else len(self.calls)  # as ToolCallAssembly numbers it
        if isinstance(call.get("id"), str) and call["id"]:
            self.ids.setdefault(index, call["id"])
        ToolCallAssembly._add_call(self, call)

    def call_ids(self) -> list[str | None]:
        return [self.ids.get(index) for index in sorted(self.calls)]


async def _stream(client: StreamingClient, body: Mapping[str, Any], timeout_s: float) -> tuple[StreamedReply,
                                                                                                list[str | None]]:
    # chat_stream.stream_chat with the id-keeping assembly: its ToolCallText carries no call id.
    payload = json.dumps(body, separators=(",", ":")).encode()
    stream = ChatStream(time.perf_counter(), int(body["max_tokens"]))
    stream.assembly = assembly = _CallIds()
    failure = await post_stream(client, CHAT_PATH, payload, stream.feed, timeout_s)
    return stream.reply(failure, time.perf_counter()), assembly.call_ids()


@dataclass(slots=True)
class _Tally:
    """What one entry's requests cost and how its replies went."""

    requests: int = 0
    decode_failures: int = 0
    truncated: int = 0
    output_tokens: int = 0
    prompt_tokens: int | None = None
    model_s: float = 0.0

    def add(self, reply: StreamedReply) -> None:
        self.requests += 1
        self.truncated += reply.finish_reason == "length"
        self.output_tokens += reply.output_tokens or 0
        self.model_s += reply.e2e_s or 0.0
        if reply.record is not None and reply.record.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + reply.record.prompt_tokens


@dataclass(frozen=True, slots=True)
class _Conversation:
    """What every entry of a run shares: the server, the request settings and the worker."""

    client: StreamingClient
    worker: BfclWorker
    model: str
    settings: RunSettings
    max_steps: int

    def body(self, messages: list[dict[str, Any]], tool_set: ToolSet) -> dict[str, Any]:
        return {"model": self.model, "messages": messages, "temperature": self.settings.temperature,
                "max_tokens": self.settings.max_tokens, "seed": self.settings.seed, "stream": True,
                "stream_options": {"include_usage": True}, **get_decoding("free").request_fields(tool_set),
                **self.settings.extra_body}


def _decode(reply: StreamedReply, tool_set: ToolSet) -> list[str] | None:
    """BFCL's ``decode_execute`` of a reply: its call strings; [] without a call, None when they do not decode."""
    if not reply.tool_calls:
        return []  # BFCL decodes the content string instead, which yields no call or fails: the turn ends either way
    responses = [{tool_set.name_map.get(call.name, call.name): call.arguments} for call in reply.tool_calls]
    try:
        return _loop().convert_to_function_call(responses)
    except Exception:  # noqa: BLE001 - BFCL ends the turn on any decode error, so does the harness
        return None


def _assistant_message(reply: StreamedReply, ids: list[str], calls: bool) -> dict[str, Any]:
    if not calls:
        return {"role": "assistant", "content": reply.content}
    return {"role": "assistant", "content": reply.content or None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments}}
                           for call_id, call in zip(ids, reply.tool_calls, strict=True)]}


async def _turn(conversation: _Conversation, entry: dict[str, Any], messages: list[dict[str, Any]], tool_set: ToolSet,
                steps: list[list[str]], tally: _Tally, turn: int) -> RequestError | bool:
    """Run one turn's step loop; the request failure that ended it, else whether the entry was force-terminated."""
    while True:
        reply, ids = await _stream(conversation.client, conversation.body(messages, tool_set),
                                   conversation.settings.timeout_s)
        tally.add(reply)
        if reply.error is not None:
            return reply.error
        # A server that sent no id still needs one per call to pair it with its result.
        call_ids = [call_id or f"call_{turn}_{len(steps)}_{i}" for i, call_id in enumerate(ids)]
        messages.append(_assistant_message(reply, call_ids, bool(reply.tool_calls)))
        calls = _decode(reply, tool_set)
        tally.decode_failures += calls is None
        if not calls:
            return False
        results = await conversation.worker.execute(entry, calls)
        messages.extend({"role": "tool", "content": result, "tool_call_id": call_id}
                        for result, call_id in zip(results, call_ids, strict=False))  # BFCL zips too
        steps.append(calls)
        if len(steps) > conversation.max_steps:
            return True


async def _converse(item: MultiTurnItem, conversation: _Conversation) -> MultiTurnRecord:
    """One entry, turn by turn, then BFCL's verdict on it."""
    entry = bfcl_entry(item)
    functions = list(item.functions)
    tool_set = to_tools(functions)
    messages: list[dict[str, Any]] = []
    decoded: list[list[list[str]]] = []
    tally = _Tally()
    outcome: RequestError | bool = False
    for turn in range(len(item.turns)):
        if turn in item.missed_functions:
            functions.extend(item.missed_functions[turn])
            tool_set = to_tools(functions)
        messages.extend(user_messages(item, turn))
        decoded.append([])
        outcome = await _turn(conversation, entry, messages, tool_set, decoded[-1], tally, turn)
        if outcome is not False:
            break
    verdict: EntryVerdict
    if isinstance(outcome, RequestError):
        await conversation.worker.forget(entry)
        verdict = (False, outcome.kind, outcome.explanation)
    else:
        verdict = await conversation.worker.score(entry, decoded, item.ground_truth)
    correct, error_kind, error = verdict
    return MultiTurnRecord(
        id=item.id, category=item.category, correct=correct, turns=len(decoded),
        calls=tuple(tuple(tuple(step) for step in steps) for steps in decoded), error_kind=error_kind, error=error,
        requests=tally.requests, decode_failures=tally.decode_failures, truncated=tally.truncated,
        output_tokens=tally.output_tokens, prompt_tokens=tally.prompt_tokens, model_s=tally.model_s)


async def run_multi_turn(base_url: str, model: str, items: Sequence[MultiTurnItem], settings: RunSettings, *,
                         max_steps: int = 20, transport: httpx.AsyncBaseTransport | None = None) -> MultiTurnRun:
    """Converse through every item, ``settings.concurrency`` entries at a time (free decoding), and score each with
    BFCL's checker.

    Args:
        max_steps: executing steps per turn before the entry is force-terminated; BFCL's own limit is 20.
        transport: an httpx transport to send through (tests use ``httpx.MockTransport``).
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be positive, got {max_steps}")
    settings = settings.model_copy(update={"decoding": "free"})
    concurrency, timeout_s = settings.concurrency, settings.timeout_s
    started_at, started = now_iso(), time.perf_counter()
    records: dict[int, MultiTurnRecord] = {}
    stop: MultiTurnRecord | None = None
    queue = iter(enumerate(items))

    async def work(conversation: _Conversation) -> None:
        nonlocal stop
        # One shared iterator: each entry is taken once, and none after a run-stopping refusal.
        for index, item in queue:
            if stop is not None:
                return
            records[index] = record = await _converse(item, conversation)
            if record.error_kind in RUN_STOPPERS and stop is None:
                stop = record

    if items:
        # A unique name per run keys BFCL's instance cache, though the worker dies with the run all the same.
        classes = sorted({name for item in items for name in item.involved_classes})
        async with BfclWorker(f"harness_{uuid.uuid4().hex}", classes) as worker, \
                make_client(server_root(base_url), concurrency=concurrency, timeout_s=timeout_s,
                            transport=transport) as client:
            conversation = _Conversation(client, worker, model, settings, max_steps)
            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(min(concurrency, len(items))):
                        group.create_task(work(conversation))
            except BaseExceptionGroup as failures:
                # A harness fault (the worker, a bug): raised as itself, not wrapped, like every other fault.
                raise failures.exceptions[0] from failures
    done = [records[i] for i in sorted(records)]
    run = summarize_multi_turn(done, model=model, base_url=base_url, bfcl_version=bfcl().version, settings=settings,
                               max_steps=max_steps, started_at=started_at, wall_s=time.perf_counter() - started,
                               stop=stop)
    if run.error is not None:
        log.warning("BFCL multi-turn run on %s failed: %s", base_url, run.error)
    return run
