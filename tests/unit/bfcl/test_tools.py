from __future__ import annotations

import jsonschema
import pytest

from harness.bfcl import ToolSet, calls_schema, to_tools
from harness.parity import load_items

DOTTED = {"name": "spotify.play", "description": "Play songs.",
          "parameters": {"type": "dict", "required": ["artist"],
                         "properties": {"artist": {"type": "string", "description": "Who."},
                                        "duration": {"type": "float", "description": "Minutes."},
                                        "filters": {"type": "dict", "description": "More.",
                                                    "properties": {"mood": {"type": "string"}}},
                                        "tags": {"type": "tuple", "items": {"type": "string"}}}}}


def test_dotted_names_are_sanitised_and_mapped_back() -> None:
    tool_set = to_tools([DOTTED, {**DOTTED, "name": "plain"}])
    assert tool_set.names == ("spotify_play", "plain")
    assert tool_set.name_map == {"spotify_play": "spotify.play", "plain": "plain"}
    assert DOTTED["name"] == "spotify.play"  # the item's docs are untouched


def test_gorilla_types_become_json_schema_types_as_bfcl_converts_them() -> None:
    (tool,) = to_tools([DOTTED]).tools
    assert tool["type"] == "function"
    parameters = tool["function"]["parameters"]
    assert parameters["type"] == "object" and parameters["required"] == ["artist"]
    properties = parameters["properties"]
    assert properties["duration"]["type"] == "number" and properties["duration"]["format"] == "float"
    assert properties["duration"]["description"].endswith("This is a float type value.")
    assert properties["filters"]["type"] == "object"
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}}


def test_colliding_sanitised_names_are_refused() -> None:
    with pytest.raises(ValueError, match="spotify_play"):
        to_tools([DOTTED, {**DOTTED, "name": "spotify_play"}])


def test_multi_turn_response_schema_is_not_sent() -> None:
    (tool,) = to_tools([{**DOTTED, "response": {"type": "dict", "properties": {}}}]).tools
    assert "response" not in tool["function"]


def test_calls_schema_accepts_calls_and_no_call_and_rejects_strangers() -> None:
    tool_set = to_tools([DOTTED, {**DOTTED, "name": "other"}])
    schema = calls_schema(tool_set)
    jsonschema.validate([], schema)
    jsonschema.validate([{"name": "spotify_play", "arguments": {"artist": "A"}},
                         {"name": "other", "arguments": {"artist": "B", "duration": 2.5}}], schema)
    for bad in ([{"name": "spotify.play", "arguments": {"artist": "A"}}], [{"name": "other"}],
                [{"name": "other", "arguments": {"artist": "B"}, "extra": 1}]):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert calls_schema(ToolSet((), {})) == {"type": "array", "maxItems": 0}


def test_every_converted_bfcl_tool_and_calls_schema_is_valid_json_schema() -> None:
    validator = jsonschema.Draft202012Validator
    for item in load_items(["live_multiple", "parallel_multiple"], limit=60, seed=3):
        tool_set = to_tools(item.prompt_functions)
        for tool in tool_set.tools:
            validator.check_schema(tool["function"]["parameters"])
        validator.check_schema(calls_schema(tool_set))
