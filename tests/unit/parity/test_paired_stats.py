from __future__ import annotations

import pytest

from harness.parity.paired_stats import (
    PairedStratum,
    bootstrap_delta_interval,
    items_needed,
    mcnemar_exact,
    mcnemar_power,
)


@pytest.mark.parametrize(("b", "c", "p"), [
    (0, 0, 1.0),
    (1, 10, 0.01171875),      # 2 * (C(11,0) + C(11,1)) / 2^11; statsmodels mcnemar(exact=True) agrees
    (10, 1, 0.01171875),      # two-sided: symmetric
    (0, 5, 0.0625),           # 2 / 2^5
    (5, 5, 1.0),              # capped at 1
    (2, 8, 0.109375),         # 2 * (1 + 10 + 45) / 1024
    (3, 0, 0.25),
])
def test_exact_mcnemar_matches_known_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-12)


def test_exact_mcnemar_on_many_pairs_stays_exact() -> None:
    assert mcnemar_exact(1500, 1500) == 1.0
    assert 0 < mcnemar_exact(1000, 1200) < 1e-4
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


STRATA = {
    "simple_python": PairedStratum([True] * 80 + [False] * 20, [True] * 70 + [False] * 25 + [True] * 5, 0.5),
    "live_simple": PairedStratum([True] * 30 + [False] * 10, [True] * 28 + [False] * 12, 0.5),
}


def test_bootstrap_is_deterministic_per_seed_and_brackets_the_estimate() -> None:
    delta = 0.5 * (75 - 80) / 100 + 0.5 * (28 - 30) / 40  # weight × paired accuracy change, per category
    low, high = bootstrap_delta_interval(STRATA, resamples=2000, seed=7)
    assert (low, high) == bootstrap_delta_interval(STRATA, resamples=2000, seed=7)
    assert (low, high) != bootstrap_delta_interval(STRATA, resamples=2000, seed=8)
    assert low < delta < high and high - low < 0.2


def test_bootstrap_of_identical_runs_is_a_point() -> None:
    same = {"x": PairedStratum([True, False, True], [True, False, True], 1.0)}
    assert bootstrap_delta_interval(same, resamples=50) == (0.0, 0.0)


def test_bootstrap_rejects_unpaired_vectors() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        bootstrap_delta_interval({"x": PairedStratum([True], [True, False], 1.0)})


def _brute_power(items: int, discordance: float, drop: float, alpha: float = 0.05) -> float:
    """The definition, summed term by term: every (D, b) whose exact McNemar test rejects towards a drop."""
    from scipy.stats import binom

    p_down = (discordance + drop) / (2 * discordance)
    return sum(float(binom.pmf(d, items, discordance)) * sum(
        float(binom.pmf(b, d, p_down)) for b in range(d + 1) if b > d - b and mcnemar_exact(b, d - b) < alpha)
        for d in range(1, items + 1))


@pytest.mark.parametrize(("items", "discordance", "drop"), [(30, 0.2, 0.1), (60, 0.1, 0.05), (45, 0.3, 0.0)])
def test_power_matches_its_definition(items: int, discordance: float, drop: float) -> None:
    assert mcnemar_power(items, discordance, drop) == pytest.approx(_brute_power(items, discordance, drop), abs=1e-9)


def test_items_needed_grows_with_discordance_and_meets_the_power() -> None:
    fewer, more = items_needed(0.05, 0.05), items_needed(0.2, 0.05)
    assert fewer is not None and more is not None and fewer < more
    assert mcnemar_power(more, 0.2, 0.05) >= 0.8 > mcnemar_power(more - 1, 0.2, 0.05)
    assert items_needed(0.9, 0.001, most=200) is None  # a tiny drop among many flips: out of reach


def test_power_rejects_impossible_inputs() -> None:
    with pytest.raises(ValueError):
        mcnemar_power(100, 0.05, 0.1)  # a net drop larger than the share of items that flip
