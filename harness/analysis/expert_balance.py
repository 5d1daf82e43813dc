"""How evenly an MoE model's experts were loaded, and how far two workloads' routing differs, from the counts the
engines' collectors stored (``harness.telemetry.expert_load_watch``).

Per layer: max/mean (what expert parallelism pays for: the busiest expert's rank sets the step), the coefficient of
variation (the spread over all experts) and the hottest expert's share of the layer's routed tokens. Between two
workloads on the same server: the Jensen-Shannon distance of each layer's expert distribution (base 2: 0 for the
same distribution, 1 for disjoint ones). A distance is a finding only against its noise: two cells of the same
workload at different concurrencies route different prompts of the same kind, and the largest distance between such
cells is the floor a workload difference must clear; with one cell per workload the floor is unknown, and said so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.spatial.distance import jensenshannon

from harness.servers.expert_load_collectors import ExpertCounts, RankCounts, pooled


@dataclass(frozen=True, slots=True)
class LayerBalance:
    layer: int
    rows: int
    max_over_mean: float
    cv: float
    hottest_expert: int
    hottest_share: float
    """The hottest expert's share of the layer's routed (token, expert) pairs."""


def layer_balance(counts: ExpertCounts) -> list[LayerBalance]:
    """Each counted layer's imbalance; a layer that routed nothing is left out."""
    found = []
    for layer, row, routed in zip(counts.layers, counts.counts, counts.rows, strict=True):
        values = np.asarray(row, dtype=float)
        total = values.sum()
        if total <= 0:
            continue
        mean = values.mean()
        hottest = int(values.argmax())
        found.append(LayerBalance(layer=layer, rows=routed, max_over_mean=float(values.max() / mean),
                                  cv=float(values.std() / mean), hottest_expert=hottest,
                                  hottest_share=float(values[hottest] / total)))
    return found


def pool_counts(parts: Sequence[ExpertCounts]) -> ExpertCounts | None:
    """Several intervals' counts (a cell's launches, a workload's cells) added up; None when there are none."""
    if not parts:
        return None
    answers = [RankCounts(layers=p.layers, experts=p.experts, top_k=p.top_k, counts=p.counts, rows=p.rows,
                          hook_seconds=p.hook_seconds) for p in parts]
    return pooled(parts[0].collector, answers).model_copy(update={"ranks": parts[0].ranks})


def routing_distance(a: ExpertCounts, b: ExpertCounts) -> tuple[float, float] | None:
    """(mean over layers, largest layer) Jensen-Shannon distance between two intervals' routing, over the layers
    both counted; None when they share no layer with tokens."""
    b_layers = dict(zip(b.layers, b.counts, strict=True))
    distances = []
    for layer, row in zip(a.layers, a.counts, strict=True):
        other = b_layers.get(layer)
        if other is None or sum(row) == 0 or sum(other) == 0 or len(other) != len(row):
            continue
        distances.append(float(jensenshannon(np.asarray(row, float), np.asarray(other, float), base=2)))
    if not distances:
        return None
    return float(np.mean(distances)), float(np.max(distances))


@dataclass(frozen=True, slots=True)
class WorkloadDistance:
    """How differently one server routed two workloads, against the noise of routing the same workload twice."""

    server: str
    first: str
    second: str
    mean: float
    largest: float
    floor: float | None
    """The largest mean distance between two cells of the same workload on this server (None: no such pair)."""

    @property
    def verdict(self) -> str:
        if self.floor is None:
            return "noise unknown (one cell per workload)"
        return "routes differently" if self.mean > self.floor else "within the noise"


def workload_distances(server: str, by_workload: Mapping[str, Sequence[ExpertCounts]]) -> list[WorkloadDistance]:
    """Every pair of workloads measured on one server (each pooled over its cells), with the noise floor from pairs
    of cells within a workload."""
    within = [d[0] for cells in by_workload.values() for x, y in combinations(cells, 2)
              if (d := routing_distance(x, y)) is not None]
    floor = max(within) if within else None
    found = []
    for first, second in combinations(sorted(by_workload), 2):
        a, b = pool_counts(by_workload[first]), pool_counts(by_workload[second])
        distance = routing_distance(a, b) if a is not None and b is not None else None
        if distance is not None:
            found.append(WorkloadDistance(server, first, second, distance[0], distance[1], floor))
    return found


@dataclass(frozen=True, slots=True)
class EngineDistance:
    """How differently two engines routed the same requests (one cell each: same model, precision, workload and
    concurrency, so the same prompts), against how differently one engine routes two request sets of the workload."""

    cell: str
    first: str
    second: str
    mean: float
    largest: float
    floor: tuple[float, float] | None
    """The smallest and largest distance either engine showed between two concurrencies of this workload (two
    request sets of one kind); None with no such pair."""

    @property
    def verdict(self) -> str:
        if self.floor is None:
            return "noise unknown (one concurrency per engine)"
        if self.mean < self.floor[0]:
            return "agree (closer than two request sets of one engine)"
        return "route differently" if self.mean > self.floor[1] else "inconclusive (inside the noise's range)"


def engine_distances(cells: Mapping[tuple[str, str], Mapping[str, ExpertCounts]],
                     within: Mapping[tuple[str, str], Sequence[ExpertCounts]]) -> list[EngineDistance]:
    """For every (cell key, engine pair) measured on the same requests, the engines' distance and the floor.

    ``cells`` maps (the cell's label less its runtime, the floor's key) to each runtime's counts; ``within`` maps
    (runtime, floor key) to that runtime's cells of the workload at different concurrencies."""
    floors: dict[tuple[str, str], list[float]] = {}
    for key, parts in within.items():
        pairs = [d[0] for x, y in combinations(parts, 2) if (d := routing_distance(x, y)) is not None]
        if pairs:
            floors[key] = pairs
    found = []
    for (cell, floor_key), by_runtime in cells.items():
        for first, second in combinations(sorted(by_runtime), 2):
            distance = routing_distance(by_runtime[first], by_runtime[second])
            if distance is None:
                continue
            noise = [d for k in ((first, floor_key), (second, floor_key)) for d in floors.get(k, ())]
            found.append(EngineDistance(cell, first, second, distance[0], distance[1],
                                        (min(noise), max(noise)) if noise else None))
    return found
