"""Margins between two cells: a lead outside the launch noise, a tie inside it, or noise unknown with one launch."""

from __future__ import annotations

import pytest

from harness.analysis.noise import cell_cost_margin, cost_margin, launch_throughputs, margin
from harness.metrics import combine, combine_launches

from tests.support.stored_cells import summary

STEADY, FASTER = [100.0, 102.0, 98.0], [130.0, 128.0, 131.0]
NOISY_A, NOISY_B = [100.0, 140.0, 80.0], [110.0, 90.0, 130.0]


def test_a_lead_outside_the_noise() -> None:
    found = margin(STEADY, FASTER)
    assert found.call == "b" and found.conclusive and found.interval is not None
    assert found.interval.low > 1.2 and found.launches == (3, 3)
    assert found.describe("tok/s") == f"tok/s {found.interval.text()} over 3 and 3 launches, outside the launch noise"
    assert margin(FASTER, STEADY).call == "a"


def test_a_lead_inside_the_noise_is_a_tie() -> None:
    found = margin(NOISY_A, NOISY_B)
    assert found.call == "tie" and not found.conclusive
    assert found.interval is not None and found.interval.low < 1 < found.interval.high
    assert found.describe("$/MTok").startswith("tie (inside the launch noise), $/MTok ")
    assert found.standing == "tie (inside the launch noise)"


def test_one_launch_each_is_no_finding() -> None:
    found = margin([100.0], [130.0])  # 30% apart, and still nothing to say
    assert found.interval is None and found.call == "unknown" and not found.conclusive
    assert found.describe("$/MTok") == "noise unknown (one launch each), not a finding"
    # one side with launches lends the other its noise estimate
    assert margin([100.0], FASTER).interval is not None


def test_cost_is_the_inverse_of_throughput() -> None:
    found = cost_margin(STEADY, FASTER)  # B serves ~29% more tok/s, so its tokens cost ~0.78x
    throughput = margin(STEADY, FASTER).interval
    assert found.call == "a" and found.interval is not None and throughput is not None
    assert found.interval.ratio == pytest.approx(1 / throughput.ratio)
    assert found.interval.low == pytest.approx(1 / throughput.high)
    zero = cost_margin([0.0, 100.0, 101.0], FASTER)
    assert zero.interval is None and zero.describe("$/MTok").startswith("noise unknown (a launch figure")


def test_repeats_on_one_launch_are_not_launches() -> None:
    repeated = combine([summary(v, 20.0) for v in NOISY_A])  # three repeats, one server launch
    assert repeated.launches == 1 and launch_throughputs(repeated) == (repeated.output_throughput,)
    launched = combine_launches([summary(v, 20.0) for v in STEADY])
    assert launched.launches == 3 and launch_throughputs(launched) == tuple(STEADY)
    faster = combine_launches([summary(v, 20.0) for v in FASTER])
    assert cell_cost_margin(launched, faster).call == "a"
    assert cell_cost_margin(repeated, summary(130.0, 20.0)).call == "unknown"
