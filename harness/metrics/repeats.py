"""A cell measured ``repeats`` times: the repeats' summaries in, one summary with medians and spreads out.

Each metric combines as ``METRICS`` declares (``across_repeats``): counts add up, figures take the median of the
repeats, and counter-based figures (speculative acceptance, the server's histograms and prefix cache) are
recomputed from counter deltas pooled over all repeats, which the caller scrapes and passes in. Every directional
figure also gets its spread (bootstrap 95% interval of the median, MAD) so that a gate can tell noise from change.
A single repeat comes back unchanged: the summary of an unrepeated cell is exactly what it always was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.load.cpu_watch import ClientLoad
from harness.metrics.spread import Spread, spread
from harness.metrics.summary import METRICS, CellSummary, LatencyStats
from harness.servers.prometheus import ServerStats, SpeculationStats

LATENCY_FIGURES = ("mean", "median", "p90", "p99", "p99_9")
"""The fields of a latency distribution that get a spread (``ttft_ms.p99`` ...)."""


def _added(values: list[Any]) -> Any:
    if isinstance(values[0], dict):
        total: dict[str, Any] = {}
        for value in values:
            for key, amount in value.items():
                total[key] = total.get(key, 0) + amount
        return total
    return sum(values)


def _median(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if isinstance(present[0], LatencyStats):
        fields = {name: float(np.median([getattr(v, name) for v in present])) for name in ("std", *LATENCY_FIGURES)}
        return LatencyStats(count=sum(v.count for v in present), **fields)
    median = float(np.median(present))
    return int(median) if all(isinstance(v, int) for v in present) and median.is_integer() else median


def _spreads(runs: Sequence[CellSummary], seed: int) -> dict[str, Spread]:
    found: dict[str, Spread] = {}
    for metric in METRICS:
        if metric.compute is None or metric.direction == "neutral":
            continue
        values = [getattr(run, metric.name) for run in runs]
        if any(v is None for v in values):
            continue
        if isinstance(values[0], LatencyStats):
            for figure in LATENCY_FIGURES:
                found[f"{metric.name}.{figure}"] = spread([getattr(v, figure) for v in values], seed=seed)
        else:
            found[metric.name] = spread([float(v) for v in values], seed=seed)
    return found


def _busiest(runs: Sequence[CellSummary]) -> ClientLoad | None:
    loads = [run.client for run in runs if run.client is not None]
    return max(loads, key=lambda load: (load.bottleneck, load.cpu_util)) if loads else None


def combine(
    runs: Sequence[CellSummary], *, speculation: SpeculationStats | None = None, server: ServerStats | None = None,
    seed: int = 0,
) -> CellSummary:
    """One summary of a cell's repeats (in repeat order); ``spec``/``server`` are pooled over all repeats."""
    if not runs:
        raise ValueError("combine needs at least one repeat")
    if len(runs) == 1:
        return runs[0]
    values = {}
    for metric in METRICS:
        if metric.compute is None:
            continue
        per_repeat = [getattr(run, metric.name) for run in runs]
        values[metric.name] = _added(per_repeat) if metric.across_repeats == "sum" else _median(per_repeat)
    return CellSummary(**values, speculation=speculation, server=server, client=_busiest(runs), repeats=tuple(runs),
                       spread=_spreads(runs, seed))
