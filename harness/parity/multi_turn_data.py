"""BFCL's multi-turn test entries, read from the installed wheel with their ground truth, and sampled per category.

An entry is a conversation: a list of user turns, the function docs of the classes it involves (BFCL's
``multi_turn_func_doc``), the initial state of those classes, and per turn the call strings whose execution the
checker compares against. BFCL's own loader builds the docs (``load_dataset_entry`` calls
``populate_test_cases_with_predefined_functions``, which moves the ``missed_function`` docs of miss_func entries
out of the offered ones, turn by turn, and appends the "Python 3 syntax" hint to the offered docs only, as BFCL's
generation does). This module only reshapes an entry into a typed, immutable item and draws the same seeded
sample as ``bfcl_data.load_items``. It does not send requests or execute calls (``multi_turn_run``).

Only the categories whose classes run locally are here: the agentic ones (web search, memory) need network
access or vector stores.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.bfcl.package import BfclUnavailable, bfcl
from harness.parity.bfcl_data import sample_categories

MULTI_TURN_CATEGORIES: tuple[str, ...] = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                          "multi_turn_long_context")
"""BFCL's multi-turn section; BFCL's leaderboard scores it as the unweighted mean of these four."""


@dataclass(frozen=True, slots=True)
class MultiTurnItem:
    """One multi-turn BFCL entry: the conversation to drive, the tools it offers, and the calls that solve it."""

    id: str
    category: str
    turns: tuple[tuple[Mapping[str, Any], ...], ...]
    """Per turn, the user messages as stored; a miss_func turn that brings functions back is empty (the run sends
    BFCL's "I have updated some more functions" message there)."""
    functions: tuple[Mapping[str, Any], ...]
    """Gorilla-format docs offered from the first turn, with BFCL's language hint; held-back docs excluded."""
    missed_functions: Mapping[int, tuple[Mapping[str, Any], ...]]
    """Turn index -> docs BFCL holds back until that turn (miss_func only); BFCL adds them without the hint."""
    initial_config: Mapping[str, Any]
    """Class name -> the state its instance starts from (``_load_scenario``)."""
    involved_classes: tuple[str, ...]
    ground_truth: tuple[tuple[str, ...], ...]
    """Per turn, Python call strings such as ``"cd(folder='document')"``; an empty turn must get no call."""
    long_context: bool
    """Whether BFCL loads the classes with long padding data (its test for this is a substring of the category)."""


def load_multi_turn_items(categories: Iterable[str] = MULTI_TURN_CATEGORIES, limit: int | None = None,
                          seed: int = 0) -> list[MultiTurnItem]:
    """The entries of ``categories`` in BFCL's order; with ``limit``, a seeded sample of at most that many each.

    The sample of a category depends only on (seed, category, limit), as in ``bfcl_data.load_items``.
    """
    return sample_categories(categories, MULTI_TURN_CATEGORIES, _category, limit, seed)


@functools.cache
def _category(category: str) -> tuple[MultiTurnItem, ...]:
    package = bfcl()
    # include_prereq only concerns the memory categories; the hint is what BFCL's generation sends.
    entries = package.load_dataset_entry(category, include_prereq=False)
    answers = package.load_ground_truth_entry(category)
    if [a["id"] for a in answers] != [e["id"] for e in entries]:
        raise BfclUnavailable(f"bfcl-eval {package.version}: {category} questions and possible answers do not "
                              "line up by id; the wheel is damaged or of an unsupported layout")
    return tuple(_item(category, entry, answer["ground_truth"]) for entry, answer in zip(entries, answers, strict=True))


def _item(category: str, entry: Mapping[str, Any], ground_truth: list[list[str]]) -> MultiTurnItem:
    turns = entry["question"]
    missed = {int(turn): tuple(docs) for turn, docs in entry.get("missed_function", {}).items()}
    if len(turns) != len(ground_truth) or any(turns[turn] for turn in missed):
        raise BfclUnavailable(f"{entry['id']}: {len(turns)} turns but {len(ground_truth)} ground-truth turns, or a "
                              "turn that brings functions back also has user messages; unsupported layout")
    return MultiTurnItem(
        id=entry["id"], category=category, turns=tuple(tuple(turn) for turn in turns),
        functions=tuple(entry["function"]), missed_functions=missed,
        initial_config=entry.get("initial_config", {}), involved_classes=tuple(entry["involved_classes"]),
        ground_truth=tuple(tuple(calls) for calls in ground_truth),
        # BFCL: long_context=("long_context" in test_category or "composite" in test_category), from the id.
        long_context=any(word in entry["id"].rsplit("_", 1)[0] for word in ("long_context", "composite")),
    )
