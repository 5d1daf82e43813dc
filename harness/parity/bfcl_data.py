"""BFCL's single-turn test items, read from the installed wheel with their ground truth, and sampled per category.

This module owns which categories the harness runs and how a quick run samples them; the files, their format
and the loading functions are BFCL's own (``bfcl_eval.utils.load_dataset_entry`` / ``load_ground_truth_entry``).
It does not build requests (``harness.bfcl.tools``, ``decoding``) or score answers (``scoring``).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.bfcl.package import BfclUnavailable, bfcl
from harness.bfcl.sample import seeded_sample

AST_CATEGORIES: tuple[str, ...] = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple",
                                   "live_multiple", "live_parallel", "live_parallel_multiple")
"""Categories scored by BFCL's AST checker against ``possible_answer``."""

IRRELEVANCE_CATEGORIES: tuple[str, ...] = ("irrelevance", "live_irrelevance")
"""Categories without ground truth: an answer is correct when it makes no function call."""

CATEGORIES: tuple[str, ...] = (*AST_CATEGORIES, *IRRELEVANCE_CATEGORIES)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BfclItem:
    """One single-turn BFCL entry: what is sent, what the checker reads, and the accepted answers."""

    id: str
    category: str
    messages: tuple[Mapping[str, Any], ...]
    """The entry's only turn, as BFCL sends it (some live entries open with a system message)."""
    functions: tuple[Mapping[str, Any], ...]
    """Function docs in Gorilla format as BFCL's checker reads them (loaded without the language hint)."""
    prompt_functions: tuple[Mapping[str, Any], ...]
    """The same docs as BFCL sends them at generation time (with its "Python 3 syntax" hint appended)."""
    ground_truth: tuple[Mapping[str, Any], ...] | None
    """``possible_answer``: per call, each parameter's accepted values; None for the irrelevance categories."""

    @property
    def wants_no_call(self) -> bool:
        return self.category in IRRELEVANCE_CATEGORIES


def load_items(categories: Iterable[str] = CATEGORIES, limit: int | None = None, seed: int = 0) -> list[BfclItem]:
    """The items of ``categories`` in BFCL's order; with ``limit``, a seeded sample of at most that many per category.

    The sample of a category depends only on (seed, category, limit), so the reference and every candidate cell
    draw the same items, and adding a category to a run does not change the others' samples.
    """
    return sample_categories(categories, CATEGORIES, _category, limit, seed)


def sample_categories(categories: Iterable[str], known: tuple[str, ...], load: Callable[[str], tuple[T, ...]],
                      limit: int | None, seed: int) -> list[T]:
    """The entries of ``categories`` (each of ``known``) as ``load`` reads them, each category sampled by
    ``seeded_sample``; single-turn and multi-turn categories are checked and sampled alike."""
    categories = tuple(categories)
    unknown = sorted(set(categories) - set(known))
    if unknown:
        raise ValueError(f"unknown BFCL categories {unknown}; choose from {list(known)}")
    if limit is not None and limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    items: list[T] = []
    for category in dict.fromkeys(categories):
        items.extend(seeded_sample(load(category), category, limit, seed))
    return items


@functools.cache
def _category(category: str) -> tuple[BfclItem, ...]:
    package = bfcl()
    entries = package.load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
    hinted = package.add_language_specific_hint_to_function_doc(copy.deepcopy(entries))
    answers: list[dict[str, Any]] | None = None
    if category in AST_CATEGORIES:
        answers = package.load_ground_truth_entry(category)
        if [a["id"] for a in answers] != [e["id"] for e in entries]:
            raise BfclUnavailable(f"bfcl-eval {package.version}: {category} questions and possible answers do not "
                                  "line up by id; the wheel is damaged or of an unsupported layout")
    items = []
    for i, (entry, prompt_entry) in enumerate(zip(entries, hinted, strict=True)):
        if len(entry["question"]) != 1:
            raise BfclUnavailable(f"{entry['id']} has {len(entry['question'])} turns; {category} should be single-turn")
        items.append(BfclItem(
            id=entry["id"], category=category, messages=tuple(entry["question"][0]),
            functions=tuple(entry["function"]), prompt_functions=tuple(prompt_entry["function"]),
            ground_truth=tuple(answers[i]["ground_truth"]) if answers is not None else None,
        ))
    return tuple(items)
