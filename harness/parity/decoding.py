"""The decoding variants (``free``, ``required``, ``json_schema``): what each adds to a request, how its answer is read.

A variant is a registry entry, not a branch: it says which request fields constrain (or do not constrain) the
model, whether it can express "no call" (``required`` cannot, so the irrelevance categories are skipped under it),
and how the reply decodes into BFCL's checker format ``[{function_name: {argument: value}}, ...]``.

Decoding follows BFCL's FC handler (``OpenAICompletionsHandler.decode_ast``: ``json.loads`` of each call's
arguments text) and adds only what a harness needs: sanitised names mapped back, and every way an answer can be
unusable named instead of raised. It does not judge correctness (``scoring``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.bfcl.tools import ToolSet, calls_schema
from harness.parity.chat_stream import StreamedReply, ToolCallText

DecodeProblem = Literal["malformed_json", "wrong_shape", "unknown_function"]
"""What is wrong with an answer that tried to call: arguments (or content) that are not JSON; JSON of the wrong
shape (arguments not an object, a call without a name); a function that was not offered."""

Call = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Decoded:
    """An answer in the checker's format, or why it has none.

    ``calls`` is ``()`` when the model made no call, and None when it tried but the output cannot be read.
    """

    calls: tuple[Call, ...] | None
    problem: DecodeProblem | None = None
    detail: str | None = None

    @property
    def malformed(self) -> bool:
        return self.problem in ("malformed_json", "wrong_shape")

    @property
    def no_call(self) -> bool:
        return self.calls == ()


def decode_tool_calls(tool_calls: Sequence[ToolCallText], tool_set: ToolSet) -> Decoded:
    """Read OpenAI ``tool_calls`` (name + JSON arguments text) as BFCL's FC handler does."""
    if not tool_calls:
        return Decoded(())
    calls: list[Call] = []
    unknown: list[str] = []
    for call in tool_calls:
        try:
            arguments = json.loads(call.arguments)
        except json.JSONDecodeError as e:
            return Decoded(None, "malformed_json", f"arguments of {call.name!r} are not JSON ({e}): "
                                                   f"{call.arguments[:200]!r}")
        if not isinstance(arguments, dict):
            return Decoded(None, "wrong_shape", f"arguments of {call.name!r} are a {type(arguments).__name__}, "
                                                "not an object")
        calls.append(_named(call.name, arguments, tool_set, unknown))
    return _with_unknown(calls, unknown)


def decode_content_calls(content: str, tool_set: ToolSet) -> Decoded:
    """Read a ``[{"name": ..., "arguments": {...}}, ...]`` JSON answer from the message content."""
    text = content.strip()
    if not text:
        return Decoded(())
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        return Decoded(None, "malformed_json", f"content is not JSON ({e}): {text[:200]!r}")
    if not isinstance(parsed, list):
        return Decoded(None, "wrong_shape", f"content is a {type(parsed).__name__}, not an array of calls")
    calls: list[Call] = []
    unknown: list[str] = []
    for element in parsed:
        if not (isinstance(element, dict) and isinstance(element.get("name"), str)
                and isinstance(element.get("arguments"), dict)):
            return Decoded(None, "wrong_shape", f"not a {{name, arguments}} call: {json.dumps(element)[:200]}")
        calls.append(_named(element["name"], element["arguments"], tool_set, unknown))
    return _with_unknown(calls, unknown)


def _named(sent_name: str, arguments: dict[str, Any], tool_set: ToolSet, unknown: list[str]) -> Call:
    name = tool_set.name_map.get(sent_name)
    if name is None:
        # Kept as sent: the checker then rejects the call as a wrong function, as BFCL would.
        unknown.append(sent_name)
        name = sent_name
    return {name: arguments}


def _with_unknown(calls: list[Call], unknown: list[str]) -> Decoded:
    if unknown:
        return Decoded(tuple(calls), "unknown_function", f"called functions that were not offered: {unknown}")
    return Decoded(tuple(calls))


@dataclass(frozen=True, slots=True)
class Decoding:
    """One decoding variant: its request fields, whether it can answer "no call", and its decoder."""

    name: str
    summary: str
    request_fields: Callable[[ToolSet], dict[str, Any]]
    decode: Callable[[StreamedReply, ToolSet], Decoded]
    can_decline: bool
    """Whether the variant lets the model make no call; one that cannot is not run on the irrelevance items."""


def _tools(tool_set: ToolSet, tool_choice: str) -> dict[str, Any]:
    # BFCL leaves ``tools`` out for an entry without functions (some live_irrelevance items), and a tool_choice
    # without tools is an error on OpenAI-compatible servers.
    if not tool_set.tools:
        return {}
    return {"tools": [dict(tool) for tool in tool_set.tools], "tool_choice": tool_choice}


def _strict_tools(tool_set: ToolSet) -> dict[str, Any]:
    # vLLM >= 0.32 builds tool_choice "required" from the parser's structural tag and pins each call's arguments
    # to its schema only for functions marked ``strict`` (its --tool-strict-level auto); unmarked, the tiny model
    # answered {"arguments": 9.0444...}. Grammar-constrained decoding means the arguments too, so mark them.
    fields = _tools(tool_set, "required")
    for tool in fields.get("tools", []):
        tool["function"] = {**tool["function"], "strict": True}
    return fields


def _json_schema_fields(tool_set: ToolSet) -> dict[str, Any]:
    # Tools are still sent so that the chat template shows the model what each function does; tool_choice "none"
    # keeps the server's tool parser from taking the JSON answer out of the content.
    return {**_tools(tool_set, "none"),
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "bfcl_calls", "schema": calls_schema(tool_set),
                                                "strict": True}}}


DECODINGS: Mapping[str, Decoding] = {
    "free": Decoding("free", "tool_choice auto: free generation, the server's tool parser extracts calls",
                     lambda tools: _tools(tools, "auto"),
                     lambda reply, tools: decode_tool_calls(reply.tool_calls, tools), can_decline=True),
    "required": Decoding("required", "tool_choice required: calls constrained by the server's grammar backend",
                         _strict_tools,
                         lambda reply, tools: decode_tool_calls(reply.tool_calls, tools), can_decline=False),
    "json_schema": Decoding("json_schema", "response_format json_schema: an array of calls, read from content",
                            _json_schema_fields,
                            lambda reply, tools: decode_content_calls(reply.content, tools), can_decline=True),
}

_ALIASES = {"tool_choice_required": "required"}  # the matrix schema's spelling


def get_decoding(name: str) -> Decoding:
    """The variant called ``name``; an unknown name is an error that lists the known ones."""
    try:
        return DECODINGS[_ALIASES.get(name, name)]
    except KeyError:
        raise ValueError(f"unknown decoding {name!r}; choose from {sorted(DECODINGS)}") from None
