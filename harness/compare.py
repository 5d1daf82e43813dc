"""``harness compare A.yaml B.yaml``: two recipes (or two engine environments) on one machine, launch by launch.

The robust answer to "did this upgrade regress?" on a noisy box is not two runs an hour apart but one run that
alternates them: round ``r`` launches every configuration of A and then of B (B first on odd rounds, so neither
side always runs on a warmer machine), and each round yields one B / A ratio per cell and metric. The per-round
ratios cancel whatever drift the two launches shared; their spread gives a paired Student-t interval (one-sided
95% bounds), and the same three verdicts as the gate follow from it (B is judged as the candidate against A):
``ok``, ``regressed``, ``inconclusive`` (exit 0, 1, 3). Error counts are compared exactly.

Cells pair by label (the same cell under another engine version or environment), else by position when the two
matrices expand to the same number of cells in the same order (another precision, say).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from pydantic import TypeAdapter

from harness.config import GateSpec
from harness.endpoint_access import granted
from harness.errors import ConfigError
from harness.metrics import GATE_CONFIDENCE, detectable_change, judge, paired_ratio_interval
from harness.pipeline import GroupWork, check_workloads, ensure_fixtures, run_group
from harness.plan import Cell, Plan
from harness.servers import deployment_grants
from harness.store import Store, write_atomic
from harness.verdict import GateResult, GateRow, Status, format_table, gated_metric

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Pair:
    a: Cell
    b: Cell


def pair_cells(a: Plan, b: Plan, sources: tuple[str, str]) -> list[Pair]:
    """Each cell of A with its counterpart in B: by label, else by position; ConfigError when they do not pair."""
    labels_b = {cell.label: cell for cell in b.cells}
    if len(labels_b) == len(b.cells) and all(cell.label in labels_b for cell in a.cells) \
            and len(a.cells) == len(b.cells):
        return [Pair(cell, labels_b[cell.label]) for cell in a.cells]
    if len(a.cells) != len(b.cells):
        raise ConfigError(sources[1], "axes", f"expands to {len(b.cells)} cells and {sources[0]} to "
                          f"{len(a.cells)}: compare pairs them one to one",
                          "give both matrices the same axes, differing only in what is compared")
    return [Pair(x, y) for x, y in zip(a.cells, b.cells, strict=True)]


def _rows(pair: Pair, store_a: Store, store_b: Store, launches: int, spec: GateSpec) -> list[GateRow]:
    results_a = [store_a.read_result(pair.a, k) for k in range(launches)]
    results_b = [store_b.read_result(pair.b, k) for k in range(launches)]
    label = pair.b.label if pair.a.label == pair.b.label else f"{pair.a.label} → {pair.b.label}"
    rounds = [(x.summary, y.summary) for x, y in zip(results_a, results_b, strict=True)
              if x is not None and y is not None and x.summary is not None and y.summary is not None]
    if len(rounds) < launches:
        return [GateRow(label, "cell", "", "", None, None, "failed",
                        note=f"{launches - len(rounds)} of {launches} rounds without a result on both sides")]
    rows = []
    for name in spec.metrics:
        gated = gated_metric(name)
        values = [(gated.value(x), gated.value(y)) for x, y in rounds]
        pairs = [(x, y) for x, y in values if x is not None and y is not None]
        if not pairs:
            continue
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        unit, direction, counts = gated.metric.unit, gated.metric.direction, (len(xs), len(ys))
        if gated.metric.judged == "exact" or min(xs + ys) <= 0:
            status: Status = "regressed" if max(ys) > max(xs) else "ok"
            rows.append(GateRow(label, name, unit, direction, median(xs), median(ys), status, launches=counts,
                                note="exact: any increase regresses"))
            continue
        interval = paired_ratio_interval(xs, ys, GATE_CONFIDENCE)
        if interval is None:
            rows.append(GateRow(label, name, unit, direction, median(xs), median(ys), "inconclusive",
                                launches=counts, note="fewer than two rounds"))
            continue
        assert direction in ("higher", "lower")
        rows.append(GateRow(label, name, unit, direction, median(xs), median(ys),
                            judge(interval, direction, spec.tolerance), interval.ratio, interval.low, interval.high,
                            interval.noise, counts, "paired by round",
                            detectable=detectable_change(interval, direction, spec.tolerance)))
    return rows


async def _launch_side(plan: Plan, store: Store, launch: int) -> None:
    for group in plan.groups:
        await run_group(GroupWork(group, group.cells, (), ()), store, plan.matrix, launch=launch)


async def run_compare(a: Plan, b: Plan, root: Path, *, launches: int, sources: tuple[str, str],
                      spec: GateSpec | None = None) -> GateResult:
    """Run A and B interleaved for ``launches`` rounds under ``root``; judge B against A, pair by pair."""
    if launches < 2:
        raise ConfigError(sources[0], "--launches", f"{launches} round(s) give no paired interval",
                          "pass --launches 3 or more")
    pairs = pair_cells(a, b, sources)
    spec = spec or b.matrix.gates
    store_a, store_b = Store(root, "a"), Store(root, "b")
    for plan, source in zip((a, b), sources, strict=True):  # validated already, but for a fixture's tokenizer
        await ensure_fixtures(plan)
        check_workloads(plan, source, deferred_only=True)
    for cell in a.cells:
        store_a.clear_launches(cell)
    for cell in b.cells:
        store_b.clear_launches(cell)
    # deployments on either side are reached with their keys, TLS settings and politeness for the whole comparison
    with granted(deployment_grants([g.server for plan in (a, b) for g in plan.groups], sources[0])):
        for launch in range(launches):
            sides = [(a, store_a), (b, store_b)]
            for name, (plan, store) in zip("AB" if launch % 2 == 0 else "BA",
                                           sides if launch % 2 == 0 else sides[::-1], strict=True):
                log.info("round %d/%d: %s (%s)", launch + 1, launches, name, plan.matrix.name)
                await _launch_side(plan, store, launch)
    rows = [row for pair in pairs for row in _rows(pair, store_a, store_b, launches, spec)]
    order = {status: i for i, status in enumerate(("failed", "regressed", "inconclusive"))}
    rows.sort(key=lambda r: order.get(r.status, len(order)))
    provenance = (f"A = {sources[0]} ({a.matrix.name}), B = {sources[1]} ({b.matrix.name}); "
                  f"{launches} interleaved rounds, B judged against A",)
    result = GateResult(rows=tuple(rows), provenance=provenance, tolerance=spec.tolerance, launches=launches,
                        machine_speed="paired")
    write_atomic(root / "compare.json", TypeAdapter(GateResult).dump_json(result, indent=2))
    return result


def format_compare(result: GateResult) -> str:
    """The comparison as the gate prints its verdict (``baseline`` is A, ``now`` is B)."""
    return format_table(result).replace("gate: ", "compare: ", 1).replace(
        f"baseline {result.launches}+ launches per configuration", f"{result.launches} paired rounds")
