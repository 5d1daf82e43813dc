"""Change points by Apache Otava on the log of a series: a step is found where it is and sized as a ratio, noise and
short or constant series raise none."""

from __future__ import annotations

import math
import random

import pytest

from harness.history import change_points


def noisy(values: list[float], sd: float, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [v * rng.lognormvariate(0.0, sd) for v in values]


def test_a_step_is_found_where_it_is_with_its_ratio() -> None:
    series = noisy([1000.0] * 10 + [700.0] * 4, sd=0.03)
    (change,) = change_points(series)
    assert change.index == 10 and change.ratio == pytest.approx(0.7, rel=0.05) and change.pvalue < 0.01
    assert change.change_pct == pytest.approx(-30.0, abs=4.0)


def test_the_same_relative_step_is_found_on_any_scale() -> None:
    slow = noisy([10.0] * 8 + [13.0] * 4, sd=0.02, seed=1)
    fast = [v * 1000 for v in slow]
    assert [c.index for c in change_points(slow)] == [c.index for c in change_points(fast)] == [8]


@pytest.mark.parametrize("values", [[], [1.0], [1.0, 2.0], [5.0] * 12, [3.0, 0.0, 3.0, 3.0]])
def test_short_constant_or_non_positive_series_have_none(values: list[float]) -> None:
    assert change_points(values) == []


def test_min_magnitude_drops_small_steps() -> None:
    series = noisy([100.0] * 10 + [95.0] * 10, sd=0.002, seed=2)
    assert [c.index for c in change_points(series)] == [10]
    assert change_points(series, min_magnitude=0.10) == []


def test_a_step_otava_alone_would_call_is_retested_with_sample_deviations() -> None:
    """Clean noise (±10%) in which Otava 0.8's own t-test, fed population standard deviations, finds a step at
    p = 0.00496 < 0.005; the re-test with the sample deviations does not."""
    from otava.analysis import compute_change_points

    clean = [1063.0, 999.0, 1131.0, 1107.0, 967.0, 1129.0, 919.0, 979.0, 942.0, 915.0]
    found, _ = compute_change_points([math.log(v) for v in clean], window_len=30, max_pvalue=0.005)
    assert [int(c.index) for c in found] == [6] and found[0].stats.pvalue < 0.005
    assert change_points(clean, max_pvalue=0.005) == []


def test_exact_levels_either_side_are_a_step_without_noise() -> None:
    (change,) = change_points([0.44] * 6 + [0.30] * 3)
    assert change.index == 6 and change.pvalue == 0.0
