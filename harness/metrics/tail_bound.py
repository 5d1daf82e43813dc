"""How many requests a claim about a latency percentile needs: MLPerf LoadGen's early-stopping bound.

A claim "the p-quantile of TTFT is at most B" read off 16 requests is a guess: their largest value is the p94 at
best. LoadGen (``loadgen/early_stopping.cc``) makes the claim an order-statistic test. If the p-quantile sat exactly
at B, each request would exceed B with probability 1 - p, independently; seeing at most ``t`` of ``n`` requests over
B would then have probability ``P(Binomial(n, 1 - p) <= t)``. When that is below 1 - confidence, the percentile is
below B with that confidence: the claim is **met**. Symmetrically, when ``P(Binomial(n, 1 - p) >= t)`` is below it,
the percentile is above B: **missed**. Otherwise the sample cannot tell (**insufficient samples**), and the fewest
requests that could support the claim with ``t`` of them over the bound is the smallest ``n`` passing the first
test: 459 at p99 with none over, 662 with one, 44 at p90 with none (LoadGen's published figures, at 99%).
"""

from __future__ import annotations

import math
from typing import Literal

CONFIDENCE = 0.99
"""LoadGen's default early-stopping confidence."""

Claim = Literal["met", "missed", "insufficient samples"]


def _binomial_cdf(t: int, n: int, q: float) -> float:
    """P(Binomial(n, q) <= t), summed in log space (n up to millions stays exact enough)."""
    if t < 0:
        return 0.0
    if t >= n:
        return 1.0
    log_q, log_r = math.log(q), math.log1p(-q)
    total = 0.0
    for k in range(t + 1):
        log_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q + (n - k) * log_r
        total += math.exp(log_term)
    return min(total, 1.0)


def claim(samples: int, over: int, percentile: float, confidence: float = CONFIDENCE) -> Claim:
    """The verdict on "the ``percentile`` (0.99 for p99) is at most the bound", from ``samples`` requests of which
    ``over`` exceeded the bound."""
    if not 0 < percentile < 1 or not 0 < confidence < 1:
        raise ValueError(f"percentile and confidence must be in (0, 1), got {percentile}, {confidence}")
    if not 0 <= over <= samples:
        raise ValueError(f"over must be in 0..samples ({samples}), got {over}")
    alpha, q = 1.0 - confidence, 1.0 - percentile
    if samples and _binomial_cdf(over, samples, q) < alpha:
        return "met"
    if over and 1.0 - _binomial_cdf(over - 1, samples, q) < alpha:
        return "missed"
    return "insufficient samples"


def samples_needed(over: int, percentile: float, confidence: float = CONFIDENCE) -> int:
    """The fewest requests that support a claim at ``percentile`` when ``over`` of them exceed the bound."""
    alpha, q = 1.0 - confidence, 1.0 - percentile
    low, high = over + 1, max(2 * (over + 1), 16)
    while _binomial_cdf(over, high, q) >= alpha:  # the CDF falls as n grows: find an n that passes, then bisect
        low, high = high, 2 * high
    while low < high:
        middle = (low + high) // 2
        if _binomial_cdf(over, middle, q) < alpha:
            high = middle
        else:
            low = middle + 1
    return low
