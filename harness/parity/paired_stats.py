"""Paired statistics for two runs over the same items: the exact McNemar test, a bootstrap interval of Δ, and the
test's power (how many items a sample needs to see a given drop).

Pure functions on verdict vectors; no BFCL, no I/O. Exact arithmetic uses ``math.comb`` on integers and binomial
sums (scipy), and the bootstrap is seeded so that the same runs always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


def mcnemar_exact(right_to_wrong: int, wrong_to_right: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of the discordant pairs against p = 1/2.

    p = min(1, 2 × P(X ≤ min(b, c))) with X ~ Binomial(b + c, 1/2); 1.0 when there are no discordant pairs.
    """
    if right_to_wrong < 0 or wrong_to_right < 0:
        raise ValueError("flip counts cannot be negative")
    n = right_to_wrong + wrong_to_right
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(right_to_wrong, wrong_to_right) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True, slots=True)
class PairedStratum:
    """One category's paired verdicts and its weight in the overall score."""

    reference: Sequence[bool]
    candidate: Sequence[bool]
    weight: float


def bootstrap_delta_interval(strata: Mapping[str, PairedStratum], resamples: int = 2000, seed: int = 0,
                             level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the weighted Δ (fractions), resampling item pairs within each category.

    Resampling within categories keeps every category's size, so the weights of the overall score stay those of
    the point estimate; pairs are resampled whole, so the correlation between the two runs is kept.
    """
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"need resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    rng = np.random.default_rng(seed)
    totals = np.zeros(resamples)
    for name in sorted(strata):  # a fixed order: the same seed draws the same numbers for the same category
        stratum = strata[name]
        if len(stratum.reference) != len(stratum.candidate):
            raise ValueError(f"category {name}: reference and candidate verdicts differ in length")
        diffs = np.asarray(stratum.candidate, float) - np.asarray(stratum.reference, float)
        if not len(diffs):
            continue
        picks = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
        totals += stratum.weight * diffs[picks].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(totals, [tail, 100 - tail])
    return float(low), float(high)


def mcnemar_power(items: int, discordance: float, drop: float, alpha: float = 0.05) -> float:
    """Probability that the exact McNemar test finds a true drop of ``drop`` (fraction) significant at ``alpha``
    on ``items`` paired items, when a share ``discordance`` of the items flip one way or the other.

    The number of discordant items is Binomial(items, discordance); given D of them, the right→wrong flips are
    Binomial(D, (discordance + drop) / (2 × discordance)), which makes the expected net drop ``drop``. Exact
    binomial sums over every D, no simulation, so the figure is the same on every run.
    """
    if items < 1 or not 0 < discordance <= 1 or not 0 <= drop <= discordance or not 0 < alpha < 1:
        raise ValueError(f"need items >= 1, 0 < discordance <= 1, 0 <= drop <= discordance and 0 < alpha < 1; "
                         f"got {items}, {discordance}, {drop}, {alpha}")
    from scipy.stats import binom  # lazy: scipy is heavy to import and only the plan and the report ask for power

    discordant = np.arange(1, items + 1)
    # Exact two-sided p < alpha  <=>  P(X >= b) < alpha / 2 for X ~ Binomial(D, 1/2) and b > D / 2: the smallest
    # such b is one above isf's k (the smallest k with P(X > k) <= alpha / 2), nudged where P(X > k) == alpha / 2.
    k = binom.isf(alpha / 2, discordant, 0.5)
    k = np.where(binom.sf(k, discordant, 0.5) >= alpha / 2, k + 1, k)
    p_flip_down = (discordance + drop) / (2 * discordance)
    detect = binom.sf(k, discordant, p_flip_down)  # P(right→wrong >= k + 1)
    return float(np.sum(binom.pmf(discordant, items, discordance) * detect))


def items_needed(discordance: float, drop: float, alpha: float = 0.05, power: float = 0.8,
                 most: int = 5000) -> int | None:
    """The fewest paired items at which ``mcnemar_power`` reaches ``power`` (None: more than ``most``)."""
    low, high = 1, most
    if mcnemar_power(high, discordance, drop, alpha) < power:
        return None
    while low < high:  # power grows with the item count (up to the test's discreteness): bisect
        middle = (low + high) // 2
        if mcnemar_power(middle, discordance, drop, alpha) >= power:
            high = middle
        else:
            low = middle + 1
    return low
