"""Paired statistics for two runs over the same items: the exact McNemar test and a bootstrap interval of Δ.

Pure functions on verdict vectors; no BFCL, no I/O. Exact arithmetic uses ``math.comb`` on integers (scipy is not
a dependency), and the bootstrap is seeded so that the same runs always give the same interval.
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
