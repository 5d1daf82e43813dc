"""Measured routing back into the prediction: a run's expert-load counts fitted to the power law AIConfigurator prices
MoE layers with, and the nearest distribution it holds tables for.

AIConfigurator draws each expert's load from a bounded power law, density proportional to ``x^-alpha`` between the
smallest and the largest load (its ``collect_moe.py``), and holds MoE tables for alpha 1.01 (its default for
DeepSeek), 1.2 (Qwen3 MoE) and a balanced routing (alpha 0 in its terms). The fit here is the maximum-likelihood alpha
of that bounded law over every counted layer's expert loads (each layer scaled by its mean, so layers of different
token counts pool), bias-corrected and with a 90% interval by the bootstrap over the experts; the nearest tabled
distribution then replaces the default, and the plan says so, with the interval and which tables it does not rule
out.

What the fit says is about the run it reads: a tiny CPU fixture's routing is not DeepSeek's. Point
``predict.routing_from`` at a run of the model and traffic the prediction is for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from harness.store import expert_load_files
from harness.telemetry import read_expert_load

TABLED = {"balanced": 0.0, "power_law_1.01": 1.01, "power_law_1.2": 1.2}
"""AIConfigurator's MoE routing tables and the alpha each stands for."""
BOOTSTRAP = 400
"""Resamples of the experts for the interval (seeded: the same counts give the same interval)."""


@dataclass(frozen=True, slots=True)
class RoutingFit:
    """The fitted alpha of a run's routing, its 90% bootstrap interval, and the tabled distribution nearest to it."""

    source: str
    alpha: float
    interval: tuple[float, float]
    routing: str
    samples: int
    """Expert loads fitted (experts × layers × cells)."""

    @property
    def ruled_in(self) -> tuple[str, ...]:
        """The tabled distributions whose alpha lies inside the interval."""
        return tuple(name for name, alpha in TABLED.items() if self.interval[0] <= alpha <= self.interval[1])

    def stated(self) -> str:
        others = [name for name in self.ruled_in if name != self.routing]
        doubt = f"; the interval does not rule out {', '.join(others)}" if others else ""
        if not self.ruled_in:
            doubt = "; none of AIConfigurator's tables lies inside the interval, so its nearest stands in"
        return (f"{self.routing}: measured in {self.source}, power-law alpha {self.alpha:.2f} (90% interval "
                f"{self.interval[0]:.2f}-{self.interval[1]:.2f}, {self.samples} expert loads), the nearest of "
                f"AIConfigurator's tables{doubt}")


def _negative_log_likelihood(alpha: float, logs: np.ndarray, low: float, high: float) -> float:
    """Of a power law bounded to [low, high] (scaled loads, low > 0), at ``alpha``; alpha = 1 by its limit."""
    if abs(1.0 - alpha) < 1e-9:
        norm = -math.log(math.log(high / low))
    else:
        norm = math.log(abs(1.0 - alpha)) - math.log(abs(high ** (1.0 - alpha) - low ** (1.0 - alpha)))
    return -(len(logs) * norm - alpha * float(logs.sum()))


def fit_alpha(loads: np.ndarray) -> float:
    """The maximum-likelihood alpha in [0, 4] of positive loads; 0 where they are all equal."""
    positive = loads[loads > 0]
    low, high = float(positive.min()), float(positive.max())
    if high / low < 1.0 + 1e-9:
        return 0.0
    logs = np.log(positive)
    found = minimize_scalar(_negative_log_likelihood, bounds=(0.0, 4.0), args=(logs, low, high), method="bounded")
    return float(found.x)


def fit(loads: np.ndarray, source: str) -> RoutingFit:
    """The fit and its interval for ``loads`` (one per expert and layer, each layer scaled by its mean)."""
    estimate = fit_alpha(loads)
    rng = np.random.default_rng(0)
    draws = np.asarray([fit_alpha(rng.choice(loads, size=len(loads), replace=True)) for _ in range(BOOTSTRAP)])
    # The bounds are the sample's own smallest and largest load, which narrows the fitted law and biases alpha low
    # (1.16 for a true 1.2 from 1,024 loads); the bootstrap's own bias is subtracted, and its interval reflected
    # around the estimate (the basic bootstrap interval), so the interval is about alpha, not the biased estimate.
    alpha = max(0.0, 2 * estimate - float(draws.mean()))
    q_low, q_high = (float(v) for v in np.percentile(draws, [5, 95]))
    low, high = max(0.0, 2 * estimate - q_high), max(0.0, 2 * estimate - q_low)
    routing = min(TABLED, key=lambda name: abs(TABLED[name] - alpha))
    return RoutingFit(source=source, alpha=alpha, interval=(low, high), routing=routing, samples=len(loads))


@cache
def measured_routing(results_dir: str) -> RoutingFit | None:
    """The fit of every expert load stored under a run's results directory (``reports/<matrix>``); None where none
    was counted."""
    loads: list[float] = []
    for path in expert_load_files(Path(results_dir)):
        record = read_expert_load(path)
        for row in record.counts.counts if record is not None and record.counts is not None else ():
            mean = sum(row) / len(row)
            if mean > 0:
                loads += [count / mean for count in row]
    return fit(np.asarray(loads), results_dir) if loads else None
