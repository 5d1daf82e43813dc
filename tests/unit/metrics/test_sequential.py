"""The per-look level of a paired check keeps false verdicts at 5% over every look; a single fixed level does not."""

from __future__ import annotations

import math

import pytest

from harness.metrics import (
    FALSE_VERDICT_RATE,
    false_verdict_rate,
    look,
    look_confidence,
    per_look_level,
)


def test_per_look_level_holds_the_false_verdict_rate_on_fresh_paths() -> None:
    level = per_look_level(3, 10)
    assert level < FALSE_VERDICT_RATE / 2  # looking eight times costs: each look is judged far stricter
    measured = false_verdict_rate(3, 10, level, paths=100_000, seed=7)
    assert abs(measured - FALSE_VERDICT_RATE) < 0.005  # three standard errors of 100k paths
    # the naive rule, a fixed one-sided 5% at every look, calls about 14% of bound-sitting changes beyond it
    assert false_verdict_rate(3, 10, FALSE_VERDICT_RATE, paths=100_000, seed=7) > 0.10


def test_one_look_is_judged_at_the_rate_itself_and_bad_rounds_are_refused() -> None:
    assert per_look_level(5, 5) == FALSE_VERDICT_RATE
    assert look_confidence(0.05) == pytest.approx(0.90)
    with pytest.raises(ValueError, match="min_rounds"):
        per_look_level(1, 4)
    with pytest.raises(ValueError, match="min_rounds"):
        per_look_level(6, 4)


def test_a_look_projects_to_the_cap_whether_more_rounds_could_settle() -> None:
    level = per_look_level(3, 10)
    quiet = look([100, 101, 99], [100, 100.5, 99.5], "higher", 0.10, level, 10)
    assert quiet.interval is not None and quiet.could_settle
    # an estimate sitting at the tolerance's bound (-10%) cannot leave it at any number of rounds within the cap
    at_bound = look([100, 100, 100], [88, 92, 90], "higher", 0.10, level, 10)
    assert at_bound.interval is not None and not at_bound.could_settle
    assert math.isclose(at_bound.interval.ratio, 0.8996, rel_tol=1e-3)
    # at the cap there is nothing more to run; with one round there is no interval yet, but rounds to come
    assert not look([100, 101, 99], [100, 100.5, 99.5], "lower", 0.10, level, 3).could_settle
    first = look([100], [101], "lower", 0.10, level, 10)
    assert first.interval is None and first.could_settle
