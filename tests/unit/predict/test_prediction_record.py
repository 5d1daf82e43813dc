"""A prediction's record: strict fields (a prediction cannot claim a negative time or a share above one), and its
assumptions stated once per predictor and subject, values that vary joined in first-seen order."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.predict import Prediction, stated_assumptions


def prediction(cell: str, predictor: str = "p", **said: str) -> Prediction:
    return Prediction(cell_id=cell, predictor=predictor, predictor_version="1", ttft_ms=1, tpot_ms=1,
                      output_tok_s=1, tok_s_user=1, assumptions=said)


def test_an_assumption_shared_by_every_cell_is_stated_once_and_varying_ones_are_joined() -> None:
    found = stated_assumptions([prediction("a", batch="4", routing="balanced"),
                                prediction("b", batch="16", routing="balanced"),
                                prediction("c", "q", batch="4")])
    assert found == (("p", "batch", "4; 16"), ("p", "routing", "balanced"), ("q", "batch", "4"))


@pytest.mark.parametrize("wrong", [{"tpot_ms": 0}, {"ttft_ms": -1}, {"measured_share": 1.5}, {"unknown": 1}])
def test_a_prediction_refuses_impossible_figures(wrong: dict[str, float]) -> None:
    fields = prediction("a").model_dump() | wrong
    with pytest.raises(ValidationError):
        Prediction(**fields)
