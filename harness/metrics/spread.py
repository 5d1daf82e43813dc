"""How much a figure moved across a cell's repeats: the median with a 95% bootstrap interval and the MAD.

Pure statistics on a handful of numbers (one per repeat), seeded so that a summary is reproducible. The median
is the figure a repeated cell reports; the interval and the MAD are what let a regression gate tell noise from
change (vLLM's ``tune_speculative_k`` uses median + MAD for the same reason). With 2–5 repeats the bootstrap
interval is coarse (it cannot be wider than the observed range); the MAD is stated beside it for that reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

BOOTSTRAP_RESAMPLES = 2000


class Spread(BaseModel):
    """One figure across repeats."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    median: float
    ci_low: float
    """2.5th percentile of the bootstrap distribution of the median."""
    ci_high: float
    """97.5th percentile of the bootstrap distribution of the median."""
    mad: float
    """Median absolute deviation from the median (unscaled)."""
    values: tuple[float, ...]
    """The figure of each repeat, in repeat order."""

    @property
    def relative_mad(self) -> float | None:
        """MAD / |median|: the noise as a fraction, comparable with a gate's tolerance."""
        return self.mad / abs(self.median) if self.median else None


def spread(values: Sequence[float], *, seed: int = 0) -> Spread:
    """Median, bootstrap 95% interval of the median, and MAD of ``values`` (at least one)."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("spread needs at least one value")
    median = float(np.median(data))
    rng = np.random.default_rng(seed)
    resampled = np.median(rng.choice(data, size=(BOOTSTRAP_RESAMPLES, data.size), replace=True), axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Spread(median=median, ci_low=float(low), ci_high=float(high),
                  mad=float(np.median(np.abs(data - median))), values=tuple(float(v) for v in data))
