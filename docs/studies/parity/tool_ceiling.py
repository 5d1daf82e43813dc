"""How much of BFCL ``simple_python`` a model could pass by copying alone: the bar a tool-calling fixture that
only learnt to copy would clear.

Usage: ``.venv/bin/python docs/studies/parity/tool_ceiling.py`` (seconds). For each of the 400 items, the parameters
BFCL requires (those whose possible answers do not include "" or None) are checked against the question:

- copy ceiling: every required value appears in the question (a number as a number, a string case-insensitively),
  so a model that copies the right span into the right argument could pass it; the rest need arithmetic,
  unit conversion, paraphrase or world knowledge;
- positional rule: every required parameter is numeric and the question's numbers, in order, are the values, so
  "the k-th number into the k-th argument" passes it without reading a word.

docs/studies/parity.md ("A tool-calling fixture, not there yet") quotes its output.
"""

from __future__ import annotations

import re
from typing import Any

from harness.parity.bfcl_data import BfclItem, load_items

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def required(item: BfclItem) -> dict[str, list[Any]]:
    (call,) = item.ground_truth or ({},)
    ((_, arguments),) = call.items()
    return {k: alts for k, alts in arguments.items() if "" not in alts and None not in alts}


def appears(value: Any, question: str) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return any(float(n) == float(value) for n in NUMBER.findall(question))
    return isinstance(value, str) and value.lower() in question.lower()


def positional(item: BfclItem, question: str) -> bool:
    params = item.functions[0]["parameters"]["properties"]
    wanted = required(item)
    if not all(params.get(k, {}).get("type") in ("integer", "float") for k in wanted):
        return False
    numbers = [float(n) for n in NUMBER.findall(question)]
    return len(numbers) >= len(wanted) and all(
        any(isinstance(v, int | float) and float(v) == numbers[i] for v in alts)
        for i, alts in enumerate(wanted.values()))


def main() -> None:
    items = load_items(["simple_python"])
    copyable = by_rule = 0
    for item in items:
        question = " ".join(str(m["content"]) for m in item.messages if m["role"] == "user")
        copyable += all(any(appears(v, question) for v in alts) for alts in required(item).values())
        by_rule += positional(item, question)
    print(f"simple_python: {len(items)} items")
    print(f"copy ceiling (every required value is in the question): {copyable} ({copyable / len(items):.0%})")
    print(f"positional rule (numbers in order into numeric arguments): {by_rule} ({by_rule / len(items):.0%})")


if __name__ == "__main__":
    main()
