"""The crossover concurrency (interpolated, with its interval over launches) and the best draft depth."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.speculation_crossover import best_k, crossing, crossovers
from harness.analysis.speculation_effect import speculation_pairs

from tests.support.speculation_cells import priced_speculation_grid


def test_crossing_interpolates_in_log_log() -> None:
    # 2x at c1, 0.5x at c16: log speedup falls linearly in log c, so it is 1.0 half way, at c4
    assert crossing([(1, 2.0), (16, 0.5)]) == pytest.approx(4.0)
    assert crossing([(1, 1.5), (4, 1.2), (16, 0.8)]) == pytest.approx(
        math.exp(math.log(4) + math.log(1.2) / (math.log(1.2) - math.log(0.8)) * math.log(4)))
    assert crossing([(1, 1.2), (4, 1.0)]) == 4.0
    assert crossing([(1, 0.8), (4, 1.2)]) is None  # rising: not a stop
    assert crossing([(1, 1.3), (4, 1.1)]) is None  # never crosses inside the grid: no extrapolation


def test_crossover_with_its_interval_over_launches(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    # off TPOT 10 ms everywhere; mtp1 5 ms at c1 (2x), 10/0.5 = 20 ms at c16, 10 at c4 in launch order with noise
    tpot = {("off", c): [10.0, 10.0, 10.0] for c in (1, 4, 16)}
    tpot |= {("mtp1", 1): [5.0, 5.5, 4.5], ("mtp1", 4): [8.0, 9.0, 8.5], ("mtp1", 16): [20.0, 22.0, 18.0]}
    tpot |= {("mtp3", 1): [4.0, 4.2, 3.9], ("mtp3", 4): [12.0, 12.5, 11.0], ("mtp3", 16): [30.0, 31.0, 29.0]}
    pairs = speculation_pairs(priced_speculation_grid(write_matrix, tmp_path, tpot))
    found = {x.series.split(" · ")[4]: x for x in crossovers(pairs)}
    mtp1 = found["mtp1"]
    assert mtp1.state == "crosses" and mtp1.basis == "launches" and mtp1.crossed_in == (3, 3)
    assert 4 < (mtp1.concurrency or 0) < 16
    assert mtp1.interval is not None and mtp1.interval[0] < (mtp1.concurrency or 0) < mtp1.interval[1]
    assert 1 < (found["mtp3"].concurrency or 0) < 4


def test_one_launch_is_a_point_reading_and_states(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    tpot = {("off", c): [10.0] for c in (1, 4, 16)}
    tpot |= {("mtp1", 1): [8.0], ("mtp1", 4): [9.0], ("mtp1", 16): [9.5]}  # pays everywhere
    tpot |= {("mtp3", 1): [12.0], ("mtp3", 4): [13.0], ("mtp3", 16): [20.0]}  # never pays
    pairs = speculation_pairs(priced_speculation_grid(write_matrix, tmp_path, tpot))
    found = {x.series.split(" · ")[4]: x for x in crossovers(pairs)}
    assert found["mtp1"].state == "always pays" and found["mtp1"].concurrency is None
    assert found["mtp3"].state == "never pays"
    assert found["mtp1"].interval is None and found["mtp1"].basis == "one run"


def test_best_k_per_concurrency_with_the_runner_up_margin(write_matrix: Callable[..., Path],
                                                          tmp_path: Path) -> None:
    tpot = {("off", c): [10.0, 10.0, 10.0] for c in (1, 4, 16)}
    tpot |= {("mtp1", 1): [6.0, 6.2, 5.9], ("mtp1", 4): [8.0, 8.1, 7.9], ("mtp1", 16): [12.0, 12.0, 12.0]}
    tpot |= {("mtp3", 1): [4.0, 4.1, 3.9], ("mtp3", 4): [8.0, 9.5, 7.0], ("mtp3", 16): [20.0, 20.0, 20.0]}
    pairs = speculation_pairs(priced_speculation_grid(write_matrix, tmp_path, tpot))
    ranked = {b.concurrency: b for b in best_k(pairs)}
    assert ranked[1].best == 3 and ranked[1].runner_up == 1 and ranked[1].margin is not None
    assert ranked[1].margin.conclusive  # 4 ms against 6 ms, launches agreeing to a few percent
    assert ranked[4].best == 1 and not ranked[4].margin.conclusive  # 8.0 against 8.2 with a noisy k=3
    assert ranked[16].best is None  # no depth beats off at 16: off is the best k
    assert [k for k, _ in ranked[1].speedups] == [1, 3]


def test_two_launches_give_their_range_not_a_t_interval(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    tpot = {("off", c): [10.0, 10.0] for c in (1, 4, 16)}
    tpot |= {("mtp1", 1): [5.0, 5.0], ("mtp1", 4): [20.0, 20.0], ("mtp1", 16): [40.0, 40.0]}
    tpot |= {("mtp3", 1): [5.0, 8.0], ("mtp3", 4): [20.0, 12.5], ("mtp3", 16): [40.0, 40.0]}
    found = {x.series.split(" · ")[4]: x for x in
             crossovers(speculation_pairs(priced_speculation_grid(write_matrix, tmp_path, tpot)))}
    x = found["mtp3"]
    assert x.crossed_in == (2, 2) and x.interval is not None
    # launch 1 crosses at c2 (2x then 0.5x), launch 2 at c2.52 (1.25x then 0.8x): the range, as the report says
    assert x.interval == pytest.approx((2.0, crossing([(1, 1.25), (4, 0.8)]) or 0.0))
