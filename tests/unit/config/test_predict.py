"""The matrix's ``predict:`` section: accepted draft tokens must lie in [0, k], per method where methods differ, and
a bad value is a plan-time error naming the key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.config.predict import PredictSpec


def test_the_method_table_wins_over_the_shared_one() -> None:
    spec = PredictSpec(accepted_tokens={3: 1.7}, accepted_by_method={"eagle3": {3: 1.33}})
    assert spec.accepted("eagle3", 3) == (1.33, "predict.accepted_by_method.eagle3")
    assert spec.accepted("mtp", 3) == (1.7, "predict.accepted_tokens")
    assert spec.accepted("mtp", 2) is None


@pytest.mark.parametrize(("given", "message"), [
    ({"accepted_tokens": {3: 3.5}}, "accepted_tokens.3: 3.5 accepted tokens per step is outside [0, 3]"),
    ({"accepted_tokens": {1: -0.1}}, "accepted_tokens.1: -0.1 accepted tokens per step is outside [0, 1]"),
    ({"accepted_by_method": {"mtp": {2: 2.5}}}, "accepted_by_method.mtp.2: 2.5 accepted tokens per step"),
    ({"accepted_tokens": {0: 0.0}}, "accepted_tokens: draft length 0 must be at least 1"),
])
def test_an_accepted_length_outside_0_to_k_is_refused(given: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        PredictSpec.model_validate(given)
