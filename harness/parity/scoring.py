"""Verdicts with BFCL's own AST checker, and BFCL's own aggregation of category accuracies into sections and overall.

Per item this reproduces ``eval_runner._evaluate_single_ast_entry`` / ``_evaluate_single_relevance_entry``: a
call-expecting item fails when nothing decodes or the decoded output is not in function-calling format, and
otherwise ``ast_checker`` decides; an irrelevance item passes when no call decodes (``is_empty_output``).

Aggregation follows ``eval_runner_helper.generate_leaderboard_csv`` with its helper functions, over the sections
the harness runs:

- ``non_live``: unweighted mean of simple, multiple, parallel, parallel_multiple. BFCL's "simple" is itself the
  mean of python, java and javascript; the harness runs Python only, so simple is ``simple_python``.
- ``live``: the live AST categories weighted by item count.
- ``irrelevance``: unweighted mean of irrelevance and live_irrelevance.
- ``multi_turn``: unweighted mean of the multi-turn categories run (a multi-turn run is scored apart from the
  single-turn ones, so its overall is this section).
- overall: BFCL's percentage-weighted total over these sections with its weights (10, 10, 10, 30). Its agentic
  (40) section is not run here, and the helper renormalises the weights over what is given.

Where BFCL counts a category it did not run as 0, the harness leaves it out: a quick parity run covers a subset
by design, and the same subset on both sides of a comparison.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from harness.bfcl.package import bfcl, bfcl_aggregation
from harness.parity.bfcl_data import BfclItem
from harness.parity.decoding import Decoded

SECTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "non_live": ("unweighted", ("simple_python", "multiple", "parallel", "parallel_multiple")),
    "live": ("weighted", ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")),
    "irrelevance": ("unweighted", ("irrelevance", "live_irrelevance")),
    "multi_turn": ("unweighted", ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                  "multi_turn_long_context")),
}
"""Section -> (BFCL helper that combines it, its categories)."""

SECTION_WEIGHTS: Mapping[str, float] = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30}
"""BFCL's weights of these sections in its overall score (``calculate_percentage_weighted_accuracy``)."""

CHECKER_MODEL_NAME = "harness"
"""Passed to the checker, which reads it only to look up name rewriting (see ``harness.bfcl.package``)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether an answer is right, and BFCL's ``error_type`` when it is not."""

    correct: bool
    error_type: str | None = None


def check(item: BfclItem, decoded: Decoded) -> Verdict:
    """Judge one decoded answer the way BFCL's eval runner does."""
    package = bfcl()
    if item.wants_no_call:
        if decoded.calls is None or package.is_empty_output(list(decoded.calls)):
            return Verdict(True)
        return Verdict(False, "irrelevance_error:decoder_success")
    if decoded.calls is None or decoded.no_call:
        return Verdict(False, "ast_decoder:decoder_failed")
    # Copies: the checker must not see (or leave) shared state between items.
    calls = copy.deepcopy(list(decoded.calls))
    if not package.is_function_calling_format_output(calls):
        return Verdict(False, "ast_decoder:decoder_wrong_output_format")
    assert item.ground_truth is not None  # every AST category has possible answers (bfcl_data checks)
    try:
        result = package.ast_checker(copy.deepcopy(list(item.functions)), calls,
                                     copy.deepcopy(list(item.ground_truth)), package.python_language,
                                     item.category, CHECKER_MODEL_NAME)
    except Exception as e:  # noqa: BLE001
        # The checker assumes well-typed answers in places (it indexes and iterates values it expects to be
        # lists or dicts); whatever a model sends must end as a wrong answer, not as a crashed run.
        return Verdict(False, f"checker_error:{type(e).__name__}")
    if result.get("valid"):
        return Verdict(True)
    return Verdict(False, str(result.get("error_type") or "ast_checker:invalid"))


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Overall and per-section accuracy (fractions), over the categories present."""

    overall: float | None
    sections: Mapping[str, float]


def aggregate(accuracy: Mapping[str, float], counts: Mapping[str, int]) -> Aggregate:
    """Combine per-category accuracies (fractions) into sections and overall with BFCL's helper functions.

    Categories with no items are left out; a section without categories is left out of the overall.
    """
    helpers = bfcl_aggregation()
    combine = {"weighted": helpers.weighted, "unweighted": helpers.unweighted}
    sections: dict[str, float] = {}
    section_scores, weights = [], []
    for section, (how, categories) in SECTIONS.items():
        present = [c for c in categories if counts.get(c, 0) > 0]
        if not present:
            continue
        scores = [{"accuracy": accuracy[c], "total_count": counts[c], "display_accuracy": accuracy[c]}
                  for c in present]
        score = combine[how](scores, display_na_if_category_missing=False)
        sections[section] = float(score["accuracy"])
        section_scores.append(score)
        weights.append(SECTION_WEIGHTS[section])
    if not section_scores:
        return Aggregate(None, sections)
    overall = helpers.percentage_weighted(section_scores, weights, display_na_if_category_missing=False)
    return Aggregate(float(overall["accuracy"]), sections)


def category_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Each category's weight in the overall score: overall = sum of weight × category accuracy.

    Derived by feeding BFCL's aggregation one category at a time at accuracy 1 (it is linear in the accuracies
    for fixed counts), so the paired statistics weigh items exactly as the reported overall does.
    """
    present = {c: n for c, n in counts.items() if n > 0}
    weights = {}
    for category in present:
        one_hot = {c: float(c == category) for c in present}
        weights[category] = aggregate(one_hot, present).overall or 0.0
    return weights
