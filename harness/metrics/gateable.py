"""The figures a verdict can judge over launches and runs: every directional scalar metric of a cell's summary,
and the median / p90 / p99 of every latency distribution, each read the same way from a summary or from each launch
it pools. The regression gate (``harness.verdict``) and the results history (``harness.history``) share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.metrics.cell_summary import METRICS, METRICS_BY_NAME, CellSummary, LatencyStats, Metric

LATENCY_STATS = ("median", "p90", "p99")


@dataclass(frozen=True, slots=True)
class GatedMetric:
    """A figure the gate can judge: a declared metric, and for latency distributions one statistic of it."""

    name: str
    metric: Metric
    stat: str | None

    def value(self, summary: CellSummary) -> float | None:
        holder: Any = summary
        for part in self.metric.name.split("."):
            holder = getattr(holder, part, None) if holder is not None else None
        if isinstance(holder, LatencyStats):
            holder = getattr(holder, self.stat or "median")
        return float(holder) if isinstance(holder, int | float) else None

    def launch_values(self, summary: CellSummary) -> list[float | None]:
        """The figure of each server launch the summary pools (one value for a single launch)."""
        return [self.value(launch) for launch in launch_summaries(summary)]


def launch_summaries(summary: CellSummary) -> tuple[CellSummary, ...]:
    """The summary of each server launch ``summary`` pools (itself for a single launch)."""
    return tuple(summary.repeats) if summary.launches > 1 else (summary,)


def _gateable() -> tuple[str, ...]:
    """Every directional scalar metric, and the median / p90 / p99 of every latency distribution."""
    names: list[str] = []
    for metric in METRICS:
        if metric.direction == "neutral" or metric.name == "speculation.per_position":
            continue
        names += [f"{metric.name}.{s}" for s in LATENCY_STATS] if metric.unit == "ms" else [metric.name]
    return tuple(names)


GATEABLE = _gateable()


def gated_metric(name: str) -> GatedMetric:
    """Resolve ``output_throughput`` or ``ttft_ms.p99``; ValueError lists what can be gated."""
    if name not in GATEABLE:
        raise ValueError(f"{name!r} is not a gateable metric; gateable: {', '.join(GATEABLE)}")
    if name in METRICS_BY_NAME:
        return GatedMetric(name, METRICS_BY_NAME[name], None)
    base, _, stat = name.rpartition(".")
    return GatedMetric(name, METRICS_BY_NAME[base], stat)
