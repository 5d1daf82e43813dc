from __future__ import annotations

import pytest

from harness.parity import AST_CATEGORIES, CATEGORIES, IRRELEVANCE_CATEGORIES, load_items

SIZES = {"simple_python": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240,
         "live_simple": 258, "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24,
         "live_irrelevance": 884}


def test_every_category_loads_whole_from_the_wheel_with_its_ground_truth() -> None:
    items = load_items(CATEGORIES)
    counts = {c: sum(i.category == c for i in items) for c in CATEGORIES}
    assert counts == SIZES
    for item in items:
        assert item.id.startswith(item.category) and item.messages
        assert (item.ground_truth is None) == (item.category in IRRELEVANCE_CATEGORIES) == item.wants_no_call
        assert len(item.functions) == len(item.prompt_functions)


def test_prompt_functions_carry_bfcl_hint_and_checker_functions_do_not() -> None:
    (item,) = load_items(["simple_python"], limit=1)
    assert item.prompt_functions[0]["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert "Python 3 syntax" not in item.functions[0]["description"]


def test_samples_are_seeded_per_category_and_keep_bfcl_order() -> None:
    first = [i.id for i in load_items(["multiple", "live_multiple"], limit=7, seed=1)]
    assert first == [i.id for i in load_items(["multiple", "live_multiple"], limit=7, seed=1)]
    assert first != [i.id for i in load_items(["multiple", "live_multiple"], limit=7, seed=2)]
    alone = [i.id for i in load_items(["live_multiple"], limit=7, seed=1)]
    assert first[7:] == alone  # another category in the run does not change this one's sample
    order = [int(i.id.split("_")[-1]) for i in load_items(["multiple"], limit=7, seed=1)]
    assert order == sorted(order) and len(set(order)) == 7
    assert len(load_items(["live_parallel"], limit=1000)) == 16


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="live_relevance"):
        load_items(["live_relevance"])
    with pytest.raises(ValueError, match="positive"):
        load_items(AST_CATEGORIES, limit=0)
