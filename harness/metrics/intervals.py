"""How sure a comparison of two sets of launches is: the ratio of their geometric means with a 95% interval.

Serving figures vary multiplicatively from launch to launch (a slow launch is slow in every cell), so comparisons
are made on logarithms: the ratio B / A is exp(mean log B - mean log A), and its interval is Student's t interval
of that difference with the two sides' variances pooled (one launch-to-launch noise, measured on both sides; a side
of one launch then borrows the other's). Paired launches (A and B run back to back in one round, as ``harness
compare`` does) use the t interval of the per-round log ratios instead, which cancels the drift both share.

A verdict against a tolerance follows from the interval alone (``judge``): ``ok`` when the whole interval lies on
the acceptable side of the tolerance, ``regressed`` when the whole interval lies beyond it, ``inconclusive`` when
the noise straddles it. Each verdict is one-sided (the bound that could contradict it), so a gate decides on the
two-sided ``GATE_CONFIDENCE`` (90%) interval: each of its bounds holds with 95% confidence, which is what "within
the tolerance with 95% confidence" and "worse than the tolerance with 95% confidence" ask. ``lead`` answers "is B
really larger than A" either way, on the two-sided 95% interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

CONFIDENCE = 0.95
GATE_CONFIDENCE = 0.90
"""Two-sided level whose bounds are each one-sided 95% bounds: what a gate's ok / regressed verdicts rest on."""
Verdict = Literal["ok", "improved", "regressed", "inconclusive"]


def student_quantile(probability: float, df: float) -> float:
    """Student's t quantile; scipy.stats is imported here, not with the module, since it costs every command
    a second and a half of start-up that most never spend on an interval."""
    from scipy import stats

    return float(stats.t.ppf(probability, df))


@dataclass(frozen=True, slots=True)
class RatioInterval:
    """B / A as a ratio of geometric means, with its ``CONFIDENCE`` interval."""

    ratio: float
    low: float
    high: float
    n_a: int
    n_b: int
    noise: float
    """Launch-to-launch noise as a fraction: exp(pooled sd of log values) - 1 (0 when the values agree exactly)."""
    paired: bool = False

    @property
    def half_width(self) -> float:
        """Half the interval's width in log terms, as a fraction (how far either way the truth may be)."""
        return math.expm1((math.log(self.high) - math.log(self.low)) / 2) if self.low > 0 else math.inf

    def text(self) -> str:
        """``0.93x [0.88, 0.99]``: the ratio and its interval, as the report and the gate print it."""
        return f"{self.ratio:.2f}x [{self.low:.2f}, {self.high:.2f}]"


def _logs(values: Sequence[float]) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    if data.size == 0 or not np.all(np.isfinite(data)) or np.any(data <= 0):
        raise ValueError("ratio intervals need positive, finite values")
    logs: np.ndarray = np.log(data)
    return logs


def ratio_interval(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> RatioInterval | None:
    """B / A from independent launches of each; None when there are too few to estimate the noise (fewer than
    three values in all) or a value is not positive."""
    try:
        log_a, log_b = _logs(a), _logs(b)
    except ValueError:
        return None
    df = log_a.size + log_b.size - 2
    if df < 1:
        return None
    squares = float(np.sum((log_a - log_a.mean()) ** 2) + np.sum((log_b - log_b.mean()) ** 2))
    sd = math.sqrt(squares / df)
    diff = float(log_b.mean() - log_a.mean())
    half = student_quantile(0.5 + confidence / 2, df) * sd * math.sqrt(1 / log_a.size + 1 / log_b.size)
    return RatioInterval(math.exp(diff), math.exp(diff - half), math.exp(diff + half), int(log_a.size),
                         int(log_b.size), math.expm1(sd))


def paired_ratio_interval(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
                          ) -> RatioInterval | None:
    """B / A from rounds that ran A and B back to back (``a[i]`` beside ``b[i]``); None with fewer than two
    rounds or a value that is not positive."""
    if len(a) != len(b):
        raise ValueError(f"paired launches need as many of A as of B: {len(a)} and {len(b)}")
    try:
        logs = _logs(b) - _logs(a)
    except ValueError:
        return None
    if logs.size < 2:
        return None
    sd = float(np.std(logs, ddof=1))
    mean = float(logs.mean())
    half = student_quantile(0.5 + confidence / 2, logs.size - 1) * sd / math.sqrt(logs.size)
    return RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), int(logs.size),
                         int(logs.size), math.expm1(sd / math.sqrt(2)), paired=True)


DETECTION_POWER = 0.80
"""How often a change of the detectable size reads ``regressed`` (the usual power of a test's design)."""


def detectable_change(interval: RatioInterval, direction: Literal["higher", "lower"], tolerance: float,
                      power: float = DETECTION_POWER, confidence: float = GATE_CONFIDENCE) -> float | None:
    """The smallest change in the worse ``direction`` that ``judge`` would read ``regressed`` ``power`` of the time
    at this interval's noise and number of launches (one-sided 95%): the tolerance, plus the noise's share of an
    interval, plus what the power asks. As a fraction (0.12: a 12% slowdown). None without noise to go on.
    ``confidence`` is the two-sided level the verdict is read at (a paired check's looks read at a stricter one)."""
    if interval.noise <= 0 or interval.n_a < 1 or interval.n_b < 1:
        return None
    sd = math.log1p(interval.noise) * (math.sqrt(2) if interval.paired else 1.0)
    if interval.paired:
        df, se = interval.n_a - 1, sd / math.sqrt(interval.n_a)
    else:
        df, se = interval.n_a + interval.n_b - 2, sd * math.sqrt(1 / interval.n_a + 1 / interval.n_b)
    if df < 1:
        return None
    bound = -math.log1p(-tolerance) if direction == "higher" else math.log1p(tolerance)
    shift = bound + (student_quantile(0.5 + confidence / 2, df) + student_quantile(power, df)) * se
    return -math.expm1(-shift) if direction == "higher" else math.expm1(shift)


def judge(interval: RatioInterval, direction: Literal["higher", "lower"], tolerance: float) -> Verdict:
    """``interval`` (now / baseline) against a relative ``tolerance`` in the metric's better ``direction``."""
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance must be inside (0, 1), got {tolerance}")
    if direction == "higher":
        worst_ok, best_ok = 1 - tolerance, 1 + tolerance
        if interval.high < worst_ok:
            return "regressed"
        if interval.low > best_ok:
            return "improved"
        return "ok" if interval.low >= worst_ok else "inconclusive"
    worst_ok, best_ok = 1 + tolerance, 1 - tolerance
    if interval.low > worst_ok:
        return "regressed"
    if interval.high < best_ok:
        return "improved"
    return "ok" if interval.high <= worst_ok else "inconclusive"


def lead(interval: RatioInterval) -> Literal["b", "a", "tie"]:
    """Which side is larger with ``CONFIDENCE`` (the interval of B / A excludes 1), else a tie."""
    if interval.low > 1:
        return "b"
    if interval.high < 1:
        return "a"
    return "tie"
