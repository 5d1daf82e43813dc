"""Test instrument for BFCL multi-turn: an entry's ground truth replayed as a model's replies, turn by turn.

``oracle_replies`` turns each ground-truth call string (``"mv(source='a.pdf', destination='temp')"``) into an
OpenAI tool call (parsed with ``ast``; positional arguments named in the order of the function doc's properties)
and groups a turn's calls into assistant replies, then ends the turn with a reply that makes no call.
``OracleServer`` serves those replies through ``httpx.MockTransport`` in vLLM's streamed format, so that a run
exercises the real path: streaming, the step loop, execution in BFCL's classes and BFCL's checker.

The server recognises the conversation a request belongs to from its user and assistant messages alone (two
entries may open with the same question), so it can serve many entries concurrently.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from harness.bfcl import to_tools
from harness.parity import MultiTurnItem
from harness.parity.multi_turn_run import user_messages

from tests.support.bfcl_wire import content_stream, streaming, tool_call_stream

END_OF_TURN = "Done."
"""The text of the reply that ends a turn without a call."""


@dataclass(frozen=True, slots=True)
class OracleReply:
    """One assistant reply: the calls to make as (name sent to the server, arguments); none ends the turn."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def parse_call(call: str, parameters: Mapping[str, Sequence[str]]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call string as (function name, keyword arguments); ``parameters`` orders each function's
    parameters, to name positional arguments (``"sort('final_report.pdf')"``)."""
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {call!r}")
    name = node.func.id
    arguments = {parameters[name][i]: ast.literal_eval(value) for i, value in enumerate(node.args)}
    arguments.update({keyword.arg: ast.literal_eval(keyword.value) for keyword in node.keywords
                      if keyword.arg is not None})
    return name, arguments


def oracle_replies(item: MultiTurnItem, calls_per_step: int | None = None) -> list[list[OracleReply]]:
    """Per turn, the replies that replay its ground truth: its calls in steps of ``calls_per_step`` (all in one
    step when None), then a reply without a call. A turn whose ground truth is empty gets only the last."""
    functions = [*item.functions, *(doc for docs in item.missed_functions.values() for doc in docs)]
    parameters = {doc["name"]: list(doc["parameters"]["properties"]) for doc in functions}
    sent = {original: name for name, original in to_tools(functions).name_map.items()}
    turns = []
    for calls in item.ground_truth:
        parsed = [parse_call(call, parameters) for call in calls]
        size = calls_per_step or max(1, len(parsed))
        steps = [tuple((sent[name], arguments) for name, arguments in parsed[i:i + size])
                 for i in range(0, len(parsed), size)]
        turns.append([*(OracleReply(step) for step in steps), OracleReply()])
    return turns


def _said(message: Mapping[str, Any]) -> list[Any]:
    """What a user or assistant message says, in a form the oracle's own replies share (JSON round trip)."""
    if message.get("tool_calls"):
        return [message["role"], [[c["function"]["name"], json.loads(c["function"]["arguments"])]
                                  for c in message["tool_calls"]]]
    return [message["role"], message.get("content")]


def _reply_said(reply: OracleReply) -> list[Any]:
    if not reply.calls:
        return ["assistant", END_OF_TURN]
    return ["assistant", [[name, json.loads(json.dumps(arguments))] for name, arguments in reply.calls]]


def conversation_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation so far without the tool results: what decides the oracle's next reply."""
    said = [_said(m) for m in messages if m.get("role") in ("user", "assistant")]
    return json.dumps(said, sort_keys=True)


class OracleServer:
    """A MockTransport handler answering each request with its entry's next ground-truth reply.

    ``requests`` keeps every request body, in arrival order, for tests to inspect.
    """

    def __init__(self, items: Sequence[MultiTurnItem], calls_per_step: int | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: dict[str, OracleReply] = {}
        for item in items:
            said: list[Mapping[str, Any]] = []
            for turn, replies in enumerate(oracle_replies(item, calls_per_step)):
                said.extend(user_messages(item, turn))
                for reply in replies:
                    key = conversation_key(said)
                    if self.replies.setdefault(key, reply) != reply:
                        raise ValueError(f"{item.id}: another entry's conversation reaches the same point and "
                                         "goes on differently; serve them from separate servers")
                    said.append(dict(zip(("role", "content"), _reply_said(reply), strict=True)))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        reply = self.replies[conversation_key(body["messages"])]
        if not reply.calls:
            return streaming(content_stream(END_OF_TURN))
        return streaming(tool_call_stream([(name, json.dumps(arguments)) for name, arguments in reply.calls]))
