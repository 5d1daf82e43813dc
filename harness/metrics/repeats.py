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
from harness.metrics.cell_summary import METRICS, CellSummary, LatencyStats
from harness.metrics.per_request import pool_request_acceptance
from harness.metrics.slo_claims import pool_claims
from harness.metrics.spread import Spread, spread
from harness.servers.prometheus import HistogramStats, PrefixCacheStats, ServerStats, SpeculationStats

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
        if metric.across_repeats == "pooled":
            values[metric.name] = pool_request_acceptance(per_repeat)
        else:
            values[metric.name] = _added(per_repeat) if metric.across_repeats == "sum" else _median(per_repeat)
    return CellSummary(**values, speculation=speculation, server=server, client=_busiest(runs), repeats=tuple(runs),
                       spread=_spreads(runs, seed), slo_claims=pool_claims([run.slo_claims for run in runs]))


def pool_speculation(stats: Sequence[SpeculationStats | None]) -> SpeculationStats | None:
    """Acceptance over several launches: their counters added, the rates recomputed from the sums."""
    present = [s for s in stats if s is not None]
    if not present:
        return None
    drafts = sum(s.drafts for s in present)
    draft_tokens = sum(s.draft_tokens for s in present)
    accepted = sum(s.accepted_tokens for s in present)
    positions = max(len(s.per_position) for s in present)
    per_position = tuple(sum(s.per_position[i] * s.drafts for s in present if i < len(s.per_position)) / drafts
                         for i in range(positions)) if drafts else ()
    return SpeculationStats(drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted,
                            acceptance_rate=accepted / draft_tokens if draft_tokens else 0.0,
                            acceptance_length=1 + accepted / drafts if drafts else 1.0, per_position=per_position)


def _pool_histograms(stats: list[HistogramStats]) -> HistogramStats | None:
    # The launches' buckets are not kept, so quantiles cannot be pooled exactly: the count adds up, the mean is
    # weighted by it, and each quantile is the median of the launches' (stated where the report shows them).
    if not stats:
        return None
    count = sum(s.count for s in stats)
    mean = sum(s.mean * s.count for s in stats) / count if count else 0.0
    return HistogramStats(count=count, mean=mean, p50=float(np.median([s.p50 for s in stats])),
                          p90=float(np.median([s.p90 for s in stats])), p99=float(np.median([s.p99 for s in stats])))


def pool_server(stats: Sequence[ServerStats | None]) -> ServerStats | None:
    """The server's own view over several launches (each launch's counters start at zero, so deltas add)."""
    present = [s for s in stats if s is not None]
    if not present:
        return None
    histograms = {name: _pool_histograms([h for s in present if (h := getattr(s, name)) is not None])
                  for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "queue_ms")}
    caches = [s.prefix_cache for s in present if s.prefix_cache is not None]
    queries, hits = sum(c.queries for c in caches), sum(c.hits for c in caches)
    cache = PrefixCacheStats(queries=queries, hits=hits, hit_rate=hits / queries if queries else None) \
        if caches else None
    counters: dict[str, float] = {}
    for s in present:
        for name, amount in s.counters.items():
            counters[name] = counters.get(name, 0.0) + amount
    return ServerStats(**histograms, prefix_cache=cache, counters=counters)


def combine_launches(launches: Sequence[CellSummary], seed: int = 0) -> CellSummary:
    """One summary of a cell measured on several server launches: each figure the median of the launches' with
    its spread across them (``repeats`` holds the launches' summaries), counter figures pooled."""
    if len(launches) == 1:
        return launches[0]
    combined = combine(launches, speculation=pool_speculation([s.speculation for s in launches]),
                       server=pool_server([s.server for s in launches]), seed=seed)
    return combined.model_copy(update={"launches": len(launches)})
