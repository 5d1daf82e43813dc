"""Where speculation stops paying, and which draft depth pays best: the crossover concurrency and the best k.

A speculative recipe's TPOT speedup over its ``off`` twin falls as the batch grows (verifying k drafts per sequence
turns a step that streamed weights into one that computes), so along a series (``speculation_effect.by_series``)
it crosses 1.0 somewhere. The crossover is interpolated between the two measured concurrencies that bracket it,
linearly in log concurrency and log speedup (speedup is a ratio, and concurrencies are measured on a doubling
grid), never extrapolated past the grid.

Its interval comes from the samples each cell keeps: one TPOT median per server launch when the cell ran on several
launches, else one per repeat on its one launch (which knows the noise within a launch only). Sample i of the
speculative cell is paired with sample i of its twin (interleaved rounds run them back to back), each sample gives
its own crossover, and the interval is Student's t over their logs (with three or more), else their range.

Best k answers ``tune_speculative_k``'s question per concurrency: among the depths of one method measured against
the same ``off`` twin, the one with the highest TPOT speedup, with the runner-up depth's margin against the noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.analysis.noise import Margin, margin
from harness.analysis.speculation_effect import SpeculationPair, by_series
from harness.metrics.cell_summary import CellSummary
from harness.metrics.intervals import CONFIDENCE, student_quantile

Basis = Literal["launches", "repeats", "one run"]


@dataclass(frozen=True, slots=True)
class Crossover:
    """One series' speedup against concurrency, and where it crosses 1.0."""

    series: str
    points: tuple[tuple[int, float], ...]
    """(concurrency, TPOT speedup) as measured, by concurrency."""
    state: Literal["crosses", "always pays", "never pays", "rises"]
    """``crosses``: above 1 then at or below it; ``rises``: below 1 then above (no crossover of the kind asked)."""
    concurrency: float | None
    """Interpolated concurrency where the speedup reaches 1.0; None unless ``crosses``."""
    interval: tuple[float, float] | None
    """95% interval (t over the samples' logs, three or more) or the samples' range (two); None with one sample."""
    crossed_in: tuple[int, int]
    """Samples whose own speedup crossed inside the grid, of the samples there were."""
    basis: Basis


def crossing(points: Sequence[tuple[int, float]]) -> float | None:
    """The first concurrency where a falling speedup reaches 1.0, interpolated in log-log between its bracket."""
    for (c0, s0), (c1, s1) in zip(points, points[1:], strict=False):
        if s0 > 1.0 >= s1:
            if s1 == 1.0:
                return float(c1)
            t = math.log(s0) / (math.log(s0) - math.log(s1))
            return math.exp(math.log(c0) + t * (math.log(c1) - math.log(c0)))
    return None


def _state(points: Sequence[tuple[int, float]]) -> Literal["crosses", "always pays", "never pays", "rises"]:
    if crossing(points) is not None:
        return "crosses"
    if all(s > 1.0 for _, s in points):
        return "always pays"
    return "rises" if any(s > 1.0 for _, s in points) else "never pays"


def tpot_samples(summary: CellSummary | None) -> tuple[tuple[float, ...], Basis]:
    """The cell's TPOT medians, one per launch (or per repeat on one launch), and which they are."""
    if summary is None or summary.tpot_ms is None:
        return (), "one run"
    spread = summary.spread.get("tpot_ms.median")
    if spread is not None and len(spread.values) > 1:
        return spread.values, "launches" if summary.launches > 1 else "repeats"
    return (summary.tpot_ms.median,), "one run"


def _sample_points(group: Sequence[SpeculationPair]) -> tuple[list[list[tuple[int, float]]], Basis]:
    """Per sample index, that sample's (concurrency, speedup) series; the shortest cell bounds the count."""
    per_pair = []
    basis: Basis = "one run"
    for pair in group:
        spec, spec_basis = tpot_samples(pair.speculative.summary)
        off, _ = tpot_samples(pair.off.summary)
        n = min(len(spec), len(off))
        per_pair.append((pair.speculative.cell.concurrency, [o / s for o, s in zip(off[:n], spec[:n], strict=True)
                                                             if s > 0]))
        basis = spec_basis
    n = min((len(v) for _, v in per_pair), default=0)
    if n < 2:
        return [], "one run"
    return [[(c, values[i]) for c, values in per_pair] for i in range(n)], basis


def _interval(values: Sequence[float]) -> tuple[float, float] | None:
    if len(values) < 2:
        return None
    if len(values) == 2:
        return min(values), max(values)
    logs = np.log(np.asarray(values, dtype=float))
    half = student_quantile(0.5 + CONFIDENCE / 2, logs.size - 1) * float(logs.std(ddof=1)) / math.sqrt(logs.size)
    return math.exp(float(logs.mean()) - half), math.exp(float(logs.mean()) + half)


def crossovers(pairs: Sequence[SpeculationPair]) -> list[Crossover]:
    """Per series with two or more concurrencies measured, its crossover of TPOT speedup through 1.0."""
    found = []
    for name, group in by_series(pairs).items():
        points = tuple((p.speculative.cell.concurrency, v) for p in group if (v := p.tpot_speedup) is not None)
        if len(points) < 2:
            continue
        samples, basis = _sample_points([p for p in group if p.tpot_speedup is not None])
        crossed = [c for sample in samples if (c := crossing(sample)) is not None]
        found.append(Crossover(name, points, _state(points), crossing(points),
                               _interval(crossed) if len(crossed) == len(samples) else None,
                               (len(crossed), len(samples)), basis))
    return found


@dataclass(frozen=True, slots=True)
class BestK:
    """At one concurrency, the draft depth of one method with the highest TPOT speedup."""

    family: str
    """Everything but the depth: model · runtime · precision · parallel · method · workload."""
    concurrency: int
    speedups: tuple[tuple[int, float], ...]
    """(k, TPOT speedup) for every depth measured here, by k."""
    best: int | None
    """The best depth; None when no depth beat ``off`` (then ``off`` is best)."""
    runner_up: int | None
    margin: Margin | None
    """The best depth's TPOT against the runner-up's (B = best), over their samples."""


def _family(pair: SpeculationPair) -> str:
    s = pair.speculative.cell.server
    extra = s.speculation.root.model_dump(exclude={"k", "method"}, exclude_defaults=True)
    detail = ", ".join(f"{k}={v}" for k, v in sorted(extra.items()))
    method = s.speculation.root.method + (f" ({detail})" if detail else "")
    return f"{s.model_name} · {s.runtime} · {s.precision.label} · {s.parallel.label} · {method} " \
           f"· {pair.speculative.cell.workload_name}"


def best_k(pairs: Sequence[SpeculationPair]) -> list[BestK]:
    """Per method family and concurrency where two or more depths were measured, the best depth."""
    groups: dict[tuple[str, int], list[tuple[int, SpeculationPair]]] = {}
    for pair in pairs:
        k = getattr(pair.speculative.cell.server.speculation.root, "k", None)
        if k is not None and pair.tpot_speedup is not None:
            groups.setdefault((_family(pair), pair.speculative.cell.concurrency), []).append((k, pair))
    found = []
    for (family, concurrency), members in groups.items():
        if len({k for k, _ in members}) < 2:
            continue
        ranked = sorted(members, key=lambda m: -(m[1].tpot_speedup or 0.0))
        (k1, top), (k2, second) = ranked[0], ranked[1]
        top_speedup = top.tpot_speedup or 0.0
        # lower TPOT is better: the runner-up's TPOT over the best's (> 1 means the best is faster)
        tie = margin(tpot_samples(top.speculative.summary)[0], tpot_samples(second.speculative.summary)[0])
        found.append(BestK(family, concurrency, tuple(sorted((k, p.tpot_speedup or 0.0) for k, p in members)),
                           k1 if top_speedup > 1.0 else None, k2, tie))
    return sorted(found, key=lambda b: (b.family, b.concurrency))
