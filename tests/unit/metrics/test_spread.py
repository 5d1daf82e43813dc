from __future__ import annotations

import pytest

from harness.metrics.spread import spread


def test_median_mad_and_interval() -> None:
    s = spread([10.0, 12.0, 11.0, 30.0, 11.5])
    assert s.median == 11.5 and s.values == (10.0, 12.0, 11.0, 30.0, 11.5)
    assert s.mad == pytest.approx(0.5)  # |deviations| 1.5, .5, .5, 18.5, 0 -> median .5
    assert 10.0 <= s.ci_low <= s.median <= s.ci_high <= 30.0
    assert s.relative_mad == pytest.approx(0.5 / 11.5)
    assert spread([10.0, 12.0, 11.0, 30.0, 11.5]) == s  # seeded: reproducible


def test_identical_values_have_no_spread_and_empty_is_an_error() -> None:
    s = spread([5.0, 5.0, 5.0])
    assert (s.ci_low, s.ci_high, s.mad) == (5.0, 5.0, 0.0)
    with pytest.raises(ValueError):
        spread([])
