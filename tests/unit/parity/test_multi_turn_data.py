from __future__ import annotations

import pytest

from harness.bfcl import bfcl
from harness.parity import MULTI_TURN_CATEGORIES, load_multi_turn_items

HINT = " Note that the provided function is in Python 3 syntax."
LOCAL_CLASSES = {"GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot", "TravelAPI",
                 "VehicleControlAPI"}


def test_every_category_loads_whole_with_its_ground_truth_turn_by_turn() -> None:
    items = load_multi_turn_items()
    assert {c: sum(i.category == c for i in items) for c in MULTI_TURN_CATEGORIES} == dict.fromkeys(
        MULTI_TURN_CATEGORIES, 200)
    for item in items:
        assert item.id.startswith(item.category) and item.turns and item.functions
        assert len(item.turns) == len(item.ground_truth)
        assert set(item.involved_classes) <= LOCAL_CLASSES  # no network, no vector store
        assert item.long_context == (item.category == "multi_turn_long_context")
        assert all(call.endswith(")") for turn in item.ground_truth for call in turn)


def test_miss_func_holds_functions_back_until_their_turn_as_bfcl_does() -> None:
    items = load_multi_turn_items(["multi_turn_miss_func"])
    assert all(item.missed_functions for item in items)
    for item in items:
        offered = {doc["name"] for doc in item.functions}
        for turn, docs in item.missed_functions.items():
            assert item.turns[turn] == ()  # BFCL sends its "more functions" message instead
            assert not offered & {doc["name"] for doc in docs}
            # BFCL hints the offered docs only; the held-back ones come back as the func doc files have them.
            assert not any(doc["description"].endswith(HINT) for doc in docs)
        assert all(doc["description"].endswith(HINT) for doc in item.functions)
    assert not any(item.missed_functions for item in load_multi_turn_items(["multi_turn_base"]))


def test_functions_are_bfcls_own_docs_of_the_involved_classes() -> None:
    (item,) = [i for i in load_multi_turn_items(["multi_turn_base"]) if i.id == "multi_turn_base_0"]
    (entry,) = [e for e in bfcl().load_dataset_entry("multi_turn_base", include_prereq=False)
                if e["id"] == item.id]
    assert list(item.functions) == entry["function"]
    assert item.initial_config == entry["initial_config"]
    assert {"cd", "mkdir", "mv"} <= {doc["name"] for doc in item.functions}


def test_samples_are_seeded_per_category_and_keep_bfcl_order() -> None:
    both = ["multi_turn_base", "multi_turn_miss_param"]
    first = [i.id for i in load_multi_turn_items(both, limit=5, seed=1)]
    assert first == [i.id for i in load_multi_turn_items(both, limit=5, seed=1)]
    assert first != [i.id for i in load_multi_turn_items(both, limit=5, seed=2)]
    assert first[5:] == [i.id for i in load_multi_turn_items(["multi_turn_miss_param"], limit=5, seed=1)]
    order = [int(i.split("_")[-1]) for i in first[:5]]
    assert order == sorted(order) and len(set(order)) == 5
    assert len(load_multi_turn_items(["multi_turn_base"], limit=1000)) == 200


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="simple_python"):
        load_multi_turn_items(["simple_python"])
    with pytest.raises(ValueError, match="positive"):
        load_multi_turn_items(limit=0)
