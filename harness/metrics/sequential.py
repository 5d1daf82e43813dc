"""Paired rounds judged as they arrive: the per-look level that keeps false verdicts at 5% under repeated looks, and
whether another round could still settle a figure.

A paired regression check (``harness regress --against``) runs reference and candidate once each per round and looks
at the per-round log ratios after every round from ``min_rounds`` to ``max_rounds``. Judging each look at a fixed
one-sided 5% would call a change sitting exactly at the tolerance "regressed" (or "ok") more than 5% of the time,
since every look is another chance. So each look is judged at a smaller one-sided level ``level``, found by
simulation as Chromium's Pinpoint finds its thresholds: normal per-round log ratios centred on the tolerance's bound
(the worst case for a false verdict), Student's t statistic at each look, and the level at which the share of paths
that cross at any look is ``alpha``. The t statistic does not depend on the noise, so one level serves every figure.
A check that stops before ``max_rounds`` (every figure settled) looks fewer times, which only lowers its rate; a
figure keeps the verdict of the first look that settles it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.metrics.intervals import RatioInterval, paired_ratio_interval, student_quantile

FALSE_VERDICT_RATE = 0.05
"""One-sided: how often a figure whose true change sits at the tolerance reads beyond it, over all looks."""
SIMULATED_PATHS = 200_000
OPTIMISM = 0.90
"""How generously ``look`` projects a figure's noise: the one-sided lower bound of its sd at this confidence."""


def chi_square_quantile(probability: float, df: int) -> float:
    from scipy import stats  # as student_quantile: scipy only when a check is judged

    return float(stats.chi2.ppf(probability, df))


def _crossings(paths: np.ndarray, min_rounds: int, level: float) -> np.ndarray:
    """Per path: does the one-sided t statistic of the first n rounds exceed its ``level`` quantile at any look n?"""
    n = np.arange(1, paths.shape[1] + 1)
    sums, squares = np.cumsum(paths, axis=1), np.cumsum(paths ** 2, axis=1)
    crossed = np.zeros(paths.shape[0], dtype=bool)
    for rounds in range(min_rounds, paths.shape[1] + 1):
        i = rounds - 1
        mean = sums[:, i] / n[i]
        sd = np.sqrt(np.maximum(squares[:, i] - n[i] * mean ** 2, 0.0) / (n[i] - 1))
        crossed |= mean > student_quantile(1 - level, rounds - 1) * sd / math.sqrt(rounds)
    return crossed


def _paths(max_rounds: int, paths: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((paths, max_rounds))


@functools.cache
def per_look_level(min_rounds: int, max_rounds: int, alpha: float = FALSE_VERDICT_RATE,
                   paths: int = SIMULATED_PATHS, seed: int = 0) -> float:
    """The one-sided level each look is judged at so that looking after every round from ``min_rounds`` to
    ``max_rounds`` gives a false verdict ``alpha`` of the time (``alpha`` itself when there is one look)."""
    if not 2 <= min_rounds <= max_rounds:
        raise ValueError(f"rounds need 2 <= min_rounds <= max_rounds, got {min_rounds} and {max_rounds}")
    if min_rounds == max_rounds:
        return alpha
    data = _paths(max_rounds, paths, seed)
    low, high = math.log(alpha / (max_rounds - min_rounds + 1)), math.log(alpha)  # Bonferroni .. one look
    for _ in range(24):  # bisection in log level: 2^-24 of the bracket, far below the simulation's own error
        middle = (low + high) / 2
        if _crossings(data, min_rounds, math.exp(middle)).mean() > alpha:
            high = middle
        else:
            low = middle
    return math.exp(low)


def false_verdict_rate(min_rounds: int, max_rounds: int, level: float, paths: int = SIMULATED_PATHS,
                       seed: int = 1) -> float:
    """The measured share of paths at the tolerance's bound that read beyond it at some look (fresh paths: a check
    of ``per_look_level``, not its own fit)."""
    return float(_crossings(_paths(max_rounds, paths, seed), min_rounds, level).mean())


def look_confidence(level: float) -> float:
    """The two-sided confidence whose bounds are each one-sided ``level`` bounds: what a look's interval is."""
    return 1 - 2 * level


@dataclass(frozen=True, slots=True)
class Look:
    """One figure at one look: its interval at the per-look level, and whether more rounds could settle it."""

    interval: RatioInterval | None
    could_settle: bool


def look(reference: Sequence[float], candidate: Sequence[float], direction: Literal["higher", "lower"],
         tolerance: float, level: float, max_rounds: int) -> Look:
    """Judge candidate / reference over the rounds so far, and project the interval to ``max_rounds``: a figure
    whose estimate sits closer to the tolerance's bound than that projected half-width could not settle within the
    cap, so it does not earn another round on its own. The projection is generous: it takes the noise at the lower
    end of what the rounds so far allow (their sd's one-sided 90% lower bound, from the chi-square), since a few
    rounds can overstate it twofold and giving up on a figure that would have settled wastes the rounds it had."""
    rounds = len(reference)
    interval = paired_ratio_interval(reference, candidate, look_confidence(level))
    if interval is None:
        return Look(None, rounds < max_rounds)
    if rounds >= max_rounds:
        return Look(interval, False)
    bound = math.log1p(-tolerance) if direction == "higher" else math.log1p(tolerance)
    sd = math.log1p(interval.noise) * math.sqrt(2)  # per-round sd of the log ratio (noise is per launch)
    low_sd = sd * math.sqrt((rounds - 1) / chi_square_quantile(OPTIMISM, rounds - 1))
    projected = student_quantile(1 - level, max_rounds - 1) * low_sd / math.sqrt(max_rounds)
    return Look(interval, abs(math.log(interval.ratio) - bound) > projected)
