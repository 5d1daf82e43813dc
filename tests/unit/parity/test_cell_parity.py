from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.parity import (
    ParityRule,
    cell_parity,
    compare,
    decoding_cost,
    find_cell_parity,
    read_cell_parity,
    write_cell_parity,
)

from tests.support.bfcl_wire import fake_run

REFERENCE = fake_run({f"simple_python_{i}": i < 90 for i in range(100)})
SAME = compare(REFERENCE, REFERENCE)
WORSE = compare(REFERENCE, fake_run({f"simple_python_{i}": i < 60 for i in range(100)}))
UNJUDGED = compare(REFERENCE, fake_run({}, error="no parser"))


def test_the_worst_decoding_makes_the_headline() -> None:
    verdict = cell_parity({"free": SAME, "required": WORSE})
    assert verdict.passed is False and verdict.decoding == "required"
    assert verdict.delta_pp == pytest.approx(-30.0) and verdict.overall_accuracy == pytest.approx(0.6)
    assert verdict.reason.startswith("required: ")


def test_an_unjudged_decoding_makes_the_cell_unjudged_unless_another_fails() -> None:
    assert cell_parity({"free": SAME, "required": UNJUDGED}).passed is None
    assert cell_parity({"free": SAME, "required": UNJUDGED}).decoding == "required"
    assert cell_parity({"free": WORSE, "required": UNJUDGED}).passed is False
    assert cell_parity({"free": SAME}).passed is True
    with pytest.raises(ValueError):
        cell_parity({})


def test_parity_json_round_trips_and_the_report_reads_its_headline(tmp_path: Path) -> None:
    verdict = cell_parity({"free": SAME, "required": WORSE},
                          {"required": decoding_cost(REFERENCE, fake_run({}, decoding="required"))})
    write_cell_parity(verdict, tmp_path / "parity.json")
    assert read_cell_parity(tmp_path / "parity.json") == verdict
    raw = json.loads((tmp_path / "parity.json").read_text())
    assert {"passed", "delta_pp", "overall_accuracy"} <= raw.keys()
    assert find_cell_parity(tmp_path / "absent.json") is None
    seen = find_cell_parity(tmp_path / "parity.json")
    assert seen is not None and seen.passed is False and seen.delta_pp == pytest.approx(-30.0)


def test_an_inconclusive_pass_makes_the_headline_and_the_cell_inconclusive() -> None:
    few = fake_run({f"simple_python_{i}": i < 9 for i in range(10)})
    weak = compare(few, few, ParityRule(min_power=0.8))
    strong = compare(REFERENCE, REFERENCE, ParityRule(min_power=0.3))  # 100 items: 38%
    assert strong.conclusive and not weak.conclusive
    verdict = cell_parity({"free": strong, "multi_turn": weak})
    assert verdict.passed is True and not verdict.conclusive and verdict.decoding == "multi_turn"
    assert "inconclusive" in verdict.reason
    assert cell_parity({"free": strong}).conclusive and cell_parity({"free": WORSE, "multi_turn": weak}).conclusive
    assert not cell_parity({"free": UNJUDGED}).conclusive
