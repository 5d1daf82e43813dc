"""BFCL function docs as OpenAI ``tools``, converted by BFCL's own function, with the way back for decoded names.

BFCL's FC handlers call ``convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)``: Gorilla
types become JSON-schema types (``dict``→``object``, ``float``→``number`` with ``format: float``, ...) and ``.`` in
a function name becomes ``_`` because OpenAI-style names must match ``^[a-zA-Z0-9_-]{1,64}$``. The checker
expects the original names, so every ``ToolSet`` keeps the map from the name sent to the name BFCL knows.

This module also owns the JSON schema of the ``json_schema`` decoding variant (an array of calls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.bfcl.package import bfcl


@dataclass(frozen=True, slots=True)
class ToolSet:
    """The tools of one request and the map from each sent (sanitised) name back to BFCL's name."""

    tools: tuple[Mapping[str, Any], ...]
    name_map: Mapping[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool["function"]["name"] for tool in self.tools)


def to_tools(functions: Sequence[Mapping[str, Any]]) -> ToolSet:
    """Convert Gorilla function docs to OpenAI ``tools`` exactly as BFCL's OpenAI-completions handler does."""
    package = bfcl()
    # convert_to_tool deep-copies its input, so the item's docs stay untouched.
    tools = package.convert_to_tool(list(functions), package.gorilla_to_openapi, package.openai_completions_style)
    name_map: dict[str, str] = {}
    for function, tool in zip(functions, tools, strict=True):
        # Multi-turn docs carry a ``response`` schema that BFCL leaves in for OpenAI style; it is not part of the
        # OpenAI tool format, and a strict server rejects it.
        tool["function"].pop("response", None)
        sent = tool["function"]["name"]
        if name_map.setdefault(sent, function["name"]) != function["name"]:
            raise ValueError(f"tools {name_map[sent]!r} and {function['name']!r} both become {sent!r} once "
                             "sanitised; their calls could not be told apart")
    return ToolSet(tuple(tools), name_map)


def calls_schema(tool_set: ToolSet) -> dict[str, Any]:
    """JSON schema of ``[{"name": ..., "arguments": {...}}, ...]`` over the tool set; ``[]`` means "no call".

    Each element is one of the tools (its name pinned by ``enum``, its arguments by the tool's own parameter
    schema), the same shape vLLM compiles for ``tool_choice="required"`` except that an empty array is allowed, so
    that the irrelevance categories can be answered.
    """
    options = [
        {"type": "object",
         "properties": {"name": {"type": "string", "enum": [tool["function"]["name"]]},
                        "arguments": tool["function"].get("parameters", {"type": "object", "properties": {}})},
         "required": ["name", "arguments"], "additionalProperties": False}
        for tool in tool_set.tools
    ]
    if not options:
        return {"type": "array", "maxItems": 0}
    return {"type": "array", "items": options[0] if len(options) == 1 else {"anyOf": options}}
