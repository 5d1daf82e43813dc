from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.parity.run_result import ItemRecord, read_run, run_failure, score_categories, write_run

from tests.support.bfcl_wire import fake_run


def record(item_id: str, **fields: object) -> ItemRecord:
    base: dict[str, object] = {"id": item_id, "category": item_id.rsplit("_", 1)[0], "correct": False,
                               "malformed": False, "no_call": False, "calls": None}
    return ItemRecord.model_validate({**base, **fields})


def test_summary_figures() -> None:
    run = fake_run({"simple_python_0": True, "simple_python_1": False, "irrelevance_0": True}, tpot_ms=7.0)
    assert run.categories["simple_python"].accuracy == 0.5 and run.categories["irrelevance"].correct == 1
    assert run.sections == {"non_live": 0.5, "irrelevance": 1.0}
    assert run.overall_accuracy == pytest.approx(0.75)
    assert run.tpot_median_ms == 7.0 and run.malformed_rate == 0.0 and run.request_error_rate == 0.0


def test_rates_count_the_right_items() -> None:
    items = [record("simple_python_0", malformed=True, error_kind="malformed_json"),
             record("simple_python_1", no_call=True, calls=()),
             record("irrelevance_0", correct=True, no_call=True, calls=()),
             record("simple_python_2", error_kind="timeout")]
    scores = score_categories(items)
    assert scores["simple_python"].malformed == 1 and scores["simple_python"].request_errors == 1
    assert scores["simple_python"].no_call == 1 and scores["irrelevance"].no_call == 1
    assert not items[0].request_failed and items[3].request_failed


def test_run_failure_needs_every_request_to_fail() -> None:
    assert run_failure([]) is None
    failed = [record(f"simple_python_{i}", error_kind="connection", error="the server could not be reached")
              for i in range(3)]
    assert run_failure(failed) == ("every request failed; 3/3: the server could not be reached", "connection")
    assert run_failure([*failed, record("simple_python_9")]) is None


def test_records_are_strict_and_frozen() -> None:
    with pytest.raises(ValueError):
        record("simple_python_0", colour="red")
    with pytest.raises(ValueError):
        record("simple_python_0", error_kind="gremlins")
    item = record("simple_python_0")
    with pytest.raises(ValueError):
        item.correct = True  # type: ignore[misc]


def test_write_and_read_round_trip(tmp_path: Path) -> None:
    run = fake_run({"simple_python_0": True, "live_multiple_1": False},
                   calls={"simple_python_0": ({"spotify.play": {"artist": "A", "n": [1, 2.5, None]}},)})
    write_run(run, tmp_path / "run.json")
    assert read_run(tmp_path / "run.json") == run
    raw = json.loads((tmp_path / "run.json").read_text())
    assert raw["overall_accuracy"] == run.overall_accuracy
    assert raw["items"][0]["calls"][0]["spotify.play"]["n"][1] == 2.5
