from __future__ import annotations

import dataclasses

import pytest

from harness.bfcl import bfcl
from harness.parity import BfclItem, scoring
from harness.parity.decoding import Decoded
from harness.parity.scoring import Verdict, aggregate, category_weights, check

FUNCTION = {"name": "calculate_triangle_area", "description": "Area.",
            "parameters": {"type": "dict", "required": ["base", "height"],
                           "properties": {"base": {"type": "integer", "description": "b"},
                                          "height": {"type": "integer", "description": "h"},
                                          "unit": {"type": "string", "description": "u"}}}}
SIMPLE = BfclItem(id="simple_python_0", category="simple_python", messages=({"role": "user", "content": "?"},),
                  functions=(FUNCTION,), prompt_functions=(FUNCTION,),
                  ground_truth=({"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}},))
IRRELEVANT = BfclItem(id="irrelevance_0", category="irrelevance", messages=SIMPLE.messages, functions=(FUNCTION,),
                      prompt_functions=(FUNCTION,), ground_truth=None)


def calls(*items: dict) -> Decoded:
    return Decoded(tuple(items))


def test_right_answers_pass_bfcl_checker() -> None:
    assert check(SIMPLE, calls({"calculate_triangle_area": {"base": 10, "height": 5}})).correct
    assert check(SIMPLE, calls({"calculate_triangle_area": {"base": 10, "height": 5, "unit": "units"}})).correct


@pytest.mark.parametrize(("answer", "error_type"), [
    (Decoded(None, "malformed_json"), "ast_decoder:decoder_failed"),
    (Decoded(()), "ast_decoder:decoder_failed"),
    (calls({"calculate_triangle_area": {"base": "10", "height": 5}}), "type_error:simple"),
    (calls({"calculate_triangle_area": {"base": True, "height": 5}}), "type_error:simple"),
    (calls({"calculate_triangle_area": {"base": 10}}), "simple_function_checker:missing_required"),
    (calls({"calculate_triangle_area": {"base": 10, "height": 5, "colour": "red"}}),
     "simple_function_checker:unexpected_param"),
    (calls({"rm_rf": {"path": "/"}}), "simple_function_checker:wrong_func_name"),
    (calls({"calculate_triangle_area": {"base": 10, "height": 5}}, {"calculate_triangle_area": {"base": 1}}),
     "simple_function_checker:wrong_count"),
    (calls({"calculate_triangle_area": ["not", "a", "dict"]}),  # type: ignore[dict-item]
     "ast_decoder:decoder_wrong_output_format"),
])
def test_wrong_answers_fail_with_bfcl_error_types(answer: Decoded, error_type: str) -> None:
    verdict = check(SIMPLE, answer)
    assert not verdict.correct and verdict.error_type == error_type


def test_a_checker_crash_on_odd_values_is_a_wrong_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*_args: object) -> dict:
        raise AttributeError("'int' object has no attribute 'items'")

    monkeypatch.setattr(scoring, "bfcl", lambda: dataclasses.replace(bfcl(), ast_checker=crash))
    verdict = check(SIMPLE, calls({"calculate_triangle_area": {"base": 10, "height": 5}}))
    assert verdict == Verdict(False, "checker_error:AttributeError")


def test_irrelevance_is_right_without_a_call() -> None:
    assert check(IRRELEVANT, Decoded(())).correct
    assert check(IRRELEVANT, Decoded(None, "malformed_json")).correct  # BFCL: an undecodable answer is no call
    assert check(IRRELEVANT, calls({})).correct  # BFCL's is_empty_output: [{}] is no call
    verdict = check(IRRELEVANT, calls({"calculate_triangle_area": {"base": 1, "height": 2}}))
    assert not verdict.correct and verdict.error_type == "irrelevance_error:decoder_success"


def test_aggregation_follows_bfcl_sections() -> None:
    accuracy = {"simple_python": 0.9, "multiple": 0.8, "live_simple": 0.5, "live_multiple": 1.0, "irrelevance": 0.6,
                "live_irrelevance": 0.4}
    counts = {"simple_python": 10, "multiple": 10, "live_simple": 10, "live_multiple": 30, "irrelevance": 5,
              "live_irrelevance": 50}
    result = aggregate(accuracy, counts)
    assert result.sections["non_live"] == pytest.approx(0.85)  # unweighted mean
    assert result.sections["live"] == pytest.approx((0.5 * 10 + 1.0 * 30) / 40)  # weighted by count
    assert result.sections["irrelevance"] == pytest.approx(0.5)  # unweighted mean
    assert result.overall == pytest.approx((0.85 + 0.875 + 0.5) / 3)
    assert aggregate({"parallel": 0.25}, {"parallel": 4}).overall == pytest.approx(0.25)
    assert aggregate({}, {}).overall is None


def test_category_weights_reproduce_the_overall() -> None:
    accuracy = {"simple_python": 0.9, "parallel": 0.3, "live_simple": 0.5, "live_multiple": 1.0,
                "live_irrelevance": 0.4}
    counts = {"simple_python": 10, "parallel": 4, "live_simple": 10, "live_multiple": 30, "live_irrelevance": 7}
    weights = category_weights(counts)
    assert sum(weights.values()) == pytest.approx(1.0)
    assert sum(weights[c] * accuracy[c] for c in counts) == pytest.approx(aggregate(accuracy, counts).overall)
