from __future__ import annotations

import copy
import re

from harness.load.tool_catalog import BUILTIN, to_openai_tool


def test_conversion_follows_bfcl_openai_style() -> None:
    function = next(e.function for e in BUILTIN if e.function["name"] == "currency_converter.convert")
    before = copy.deepcopy(function)
    tool = to_openai_tool(function)
    assert function == before  # the catalog is never modified
    assert tool["type"] == "function"
    spec = tool["function"]
    assert spec["name"] == "currency_converter_convert"
    assert spec["parameters"]["type"] == "object"
    amount = spec["parameters"]["properties"]["amount"]
    assert amount["type"] == "number" and amount["format"] == "float"
    assert amount["description"].endswith("This is a float type value.")


def test_nested_and_item_types_are_mapped() -> None:
    timer = to_openai_tool(next(e.function for e in BUILTIN if e.function["name"] == "timer.set"))["function"]
    options = timer["parameters"]["properties"]["options"]
    assert options["type"] == "object" and options["properties"]["sound"]["type"] == "boolean"
    sort = to_openai_tool(next(e.function for e in BUILTIN if e.function["name"] == "array_sort"))["function"]
    assert sort["parameters"]["properties"]["list"]["items"]["type"] == "number"


def test_every_builtin_function_is_a_valid_openai_tool() -> None:
    names = set()
    for entry in BUILTIN:
        spec = to_openai_tool(entry.function)["function"]
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", spec["name"])
        properties = spec["parameters"]["properties"]
        assert set(spec["parameters"]["required"]) <= set(properties)
        assert all(p["type"] in {"string", "integer", "number", "boolean", "array", "object"}
                   for p in properties.values())
        assert entry.question.strip()
        names.add(spec["name"])
    assert len(names) == len(BUILTIN) >= 10
