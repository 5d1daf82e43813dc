"""Ratio intervals of launches: independent and paired, the three verdicts, and leads against ties."""

from __future__ import annotations

import math

import pytest

from harness.metrics.intervals import (
    GATE_CONFIDENCE,
    detectable_change,
    judge,
    lead,
    paired_ratio_interval,
    ratio_interval,
)


def test_independent_interval_matches_the_t_interval_of_logs() -> None:
    a, b = [100.0, 110.0, 95.0], [80.0, 85.0, 90.0]
    found = ratio_interval(a, b)
    assert found is not None and found.n_a == 3 and found.n_b == 3 and not found.paired
    logs_a, logs_b = [math.log(v) for v in a], [math.log(v) for v in b]
    diff = sum(logs_b) / 3 - sum(logs_a) / 3
    assert found.ratio == pytest.approx(math.exp(diff))
    squares = sum((x - sum(logs_a) / 3) ** 2 for x in logs_a) + sum((x - sum(logs_b) / 3) ** 2 for x in logs_b)
    half = 2.7764451 * math.sqrt(squares / 4) * math.sqrt(2 / 3)  # t(0.975, 4 df)
    assert found.low == pytest.approx(math.exp(diff - half)) and found.high == pytest.approx(math.exp(diff + half))
    assert found.text() == f"{found.ratio:.2f}x [{found.low:.2f}, {found.high:.2f}]"


def test_too_few_or_unusable_values_give_no_interval() -> None:
    assert ratio_interval([100.0], [90.0]) is None  # no degree of freedom left for the noise
    assert ratio_interval([100.0, 0.0], [90.0]) is None
    assert paired_ratio_interval([100.0], [90.0]) is None
    with pytest.raises(ValueError, match="as many of A as of B"):
        paired_ratio_interval([1.0, 2.0], [1.0])


def test_pairing_cancels_shared_drift() -> None:
    a = [100.0, 70.0, 130.0, 90.0]  # the machine drifted a lot from round to round ...
    b = [x * 0.8 for x in a]  # ... and B was 20% slower in every round
    paired, independent = paired_ratio_interval(a, b), ratio_interval(a, b)
    assert paired is not None and independent is not None
    assert paired.low == pytest.approx(0.8) and paired.high == pytest.approx(0.8)
    assert judge(paired, "higher", 0.1) == "regressed" and judge(independent, "higher", 0.1) == "inconclusive"


@pytest.mark.parametrize(("values", "direction", "verdict"), [
    ((0.95, 0.97, 1.02), "higher", "ok"),
    ((0.80, 0.85, 0.88), "higher", "regressed"),
    ((0.85, 0.95, 1.05), "higher", "inconclusive"),
    ((1.15, 1.2, 1.3), "higher", "improved"),
    ((1.15, 1.2, 1.3), "lower", "regressed"),
    ((0.95, 1.0, 1.05), "lower", "ok"),
])
def test_judge(values: tuple[float, float, float], direction: str, verdict: str) -> None:
    from harness.metrics.intervals import RatioInterval

    interval = RatioInterval(values[1], values[0], values[2], 3, 3, 0.05)
    assert judge(interval, direction, 0.1) == verdict  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inside"):
        judge(interval, "higher", 1.0)


def test_lead_or_tie() -> None:
    clear = ratio_interval([100.0, 102.0, 98.0], [130.0, 128.0, 131.0])
    noisy = ratio_interval([100.0, 140.0, 80.0], [110.0, 90.0, 130.0])
    assert clear is not None and noisy is not None
    assert lead(clear) == "b" and lead(noisy) == "tie"
    flipped = ratio_interval([130.0, 128.0, 131.0], [100.0, 102.0, 98.0])
    assert flipped is not None and lead(flipped) == "a"


@pytest.mark.parametrize(("paired", "launches"), [(False, 3), (False, 6), (True, 5)])
def test_a_change_of_the_detectable_size_reads_regressed_about_four_times_in_five(paired: bool, launches: int) -> None:
    """Simulated: launches with 8% log-normal noise, the candidate slower by exactly the detectable size; judged as
    the gate judges. The share that reads regressed is the design's power (0.8), within the simulation's noise."""
    import numpy as np

    rng = np.random.default_rng(7)
    sd = math.log1p(0.08)
    probe = rng.lognormal(0.0, sd, size=(2, launches))
    interval = (paired_ratio_interval if paired else ratio_interval)(probe[0], probe[1], GATE_CONFIDENCE)
    assert interval is not None
    # the size at the noise the design assumes (the simulation's), not at one sample's estimate of it; a paired
    # interval states its noise per launch (the per-round ratio's sd over root 2)
    exact = interval.__class__(interval.ratio, interval.low, interval.high, launches, launches,
                               math.expm1(sd / math.sqrt(2)) if paired else math.expm1(sd), paired)
    size = detectable_change(exact, "higher", 0.10)
    assert size is not None and size > 0.10
    regressed = 0
    trials = 3000
    for _ in range(trials):
        base = rng.lognormal(0.0, sd, launches)
        # paired rounds share their drift: the per-round ratio's noise is what the design's sd describes
        now = base * math.exp(math.log1p(-size)) * rng.lognormal(0.0, sd, launches) if paired \
            else rng.lognormal(math.log1p(-size), sd, launches)
        found = (paired_ratio_interval if paired else ratio_interval)(base, now, GATE_CONFIDENCE)
        assert found is not None
        regressed += judge(found, "higher", 0.10) == "regressed"
    assert 0.70 <= regressed / trials <= 0.90, (size, regressed / trials)


def test_more_launches_or_less_noise_detect_smaller_changes() -> None:
    wide = ratio_interval([1.0, 1.2, 0.85], [1.0, 1.15, 0.9], GATE_CONFIDENCE)
    many = ratio_interval([1.0, 1.2, 0.85] * 3, [1.0, 1.15, 0.9] * 3, GATE_CONFIDENCE)
    quiet = ratio_interval([1.0, 1.01, 0.99], [1.0, 1.01, 0.995], GATE_CONFIDENCE)
    assert wide is not None and many is not None and quiet is not None
    sizes = [detectable_change(i, "lower", 0.10) for i in (wide, many, quiet)]
    assert all(s is not None for s in sizes)
    assert sizes[0] > sizes[1] > 0.10 and sizes[0] > sizes[2] > 0.10  # type: ignore[operator]


def test_no_noise_no_detectable_size() -> None:
    exact = ratio_interval([1.0, 1.0], [1.0, 1.0], GATE_CONFIDENCE)
    assert exact is not None and detectable_change(exact, "higher", 0.10) is None
