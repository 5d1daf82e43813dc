from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from harness.config.load import LoadPattern
from harness.load.arrivals import arrival_times, user_start_offsets


def test_count_bounded_poisson_ends_exactly_at_n_over_rate_like_vllm() -> None:
    times = arrival_times(LoadPattern(request_rate=4.0), seed=0, count=400)
    assert times.size == 400 and np.all(np.diff(times) >= 0) and times[0] > 0
    assert times[-1] == pytest.approx(400 / 4.0)
    gaps = np.diff(times)
    assert np.mean(gaps) == pytest.approx(0.25, rel=0.05)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.15)  # exponential gaps: CV 1


@pytest.mark.parametrize(("burstiness", "cv"), [(0.25, 2.0), (4.0, 0.5)])
def test_burstiness_is_the_gamma_shape(burstiness: float, cv: float) -> None:
    gaps = np.diff(arrival_times(LoadPattern(request_rate=10.0, burstiness=burstiness), seed=1, count=4000))
    assert np.mean(gaps) == pytest.approx(0.1, rel=0.08)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(cv, rel=0.15)  # gamma CV = 1/sqrt(shape)


def test_same_seed_same_schedule() -> None:
    pattern = LoadPattern(request_rate=2.0, burstiness=0.5)
    assert np.array_equal(arrival_times(pattern, 7, count=50), arrival_times(pattern, 7, count=50))
    assert not np.array_equal(arrival_times(pattern, 7, count=50), arrival_times(pattern, 8, count=50))


def test_duration_bound_and_linear_ramp() -> None:
    flat = arrival_times(LoadPattern(request_rate=20.0, duration_s=30.0), seed=2)
    assert flat.max() < 30.0 and flat.size == pytest.approx(600, rel=0.1)
    ramped = arrival_times(LoadPattern(request_rate=20.0, ramp_up_s=10.0, duration_s=30.0), seed=2)
    assert ramped.max() < 30.0
    first, second = np.sum(ramped < 5.0), np.sum((ramped >= 5.0) & (ramped < 10.0))
    after = np.sum((ramped >= 20.0) & (ramped < 25.0))
    # intensity 20 t / 10 during the ramp: 25 expected in [0, 5), 75 in [5, 10), then 100 per 5 s
    assert first == pytest.approx(25, abs=12) and second == pytest.approx(75, abs=20)
    assert after == pytest.approx(100, abs=25)
    assert ramped.size == pytest.approx(20 * (30 - 10 / 2), rel=0.1)


def test_fixed_concurrency_ramp_staggers_users() -> None:
    assert user_start_offsets(LoadPattern(), 3) == [0.0, 0.0, 0.0]
    assert user_start_offsets(LoadPattern(ramp_up_s=6.0), 3) == [0.0, 2.0, 4.0]


def test_pattern_validation_and_labels() -> None:
    assert LoadPattern(request_rate=math.inf).request_rate is None
    assert LoadPattern().label == ""
    assert LoadPattern(request_rate=4, burstiness=0.5, ramp_up_s=10, duration_s=60).label == "r4b0.5-ramp10s-60s"
    for bad in ({"request_rate": 0}, {"burstiness": 0}, {"ramp_up_s": -1}, {"rate": 1}):
        with pytest.raises(ValidationError):
            LoadPattern(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="request_rate"):
        arrival_times(LoadPattern(), 0, count=3)
    with pytest.raises(ValueError, match="bounded"):
        arrival_times(LoadPattern(request_rate=1.0), 0)
