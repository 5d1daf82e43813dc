"""Each measured cell's latency distributions as the explorer draws them: the empirical CDF of its requests' TTFT
and TPOT in milliseconds, read from the cell's ``records.jsonl`` (every launch's, when it has several).

The summary's percentiles say where a distribution's median and tail are; the CDF shows its whole shape, so a
bimodal TTFT (a prefill that queued behind another) or a long TPOT tail is seen rather than inferred. Warm-up and
failed requests are left out, as every statistic of the summary leaves them out. A cell of many requests is thinned
to at most ``MAX_POINTS`` steps of its CDF, always keeping its first and last, so a page of many cells stays light;
nothing is interpolated: every point kept is a request's own value at its own rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.load.records import RequestRecord, read_jsonl
from harness.plan.cells import Cell
from harness.store import Store

MAX_POINTS = 200
"""Steps of a CDF kept at most (evenly spaced in rank)."""


@dataclass(frozen=True, slots=True)
class Cdf:
    """An empirical CDF: the values in ascending order, and the fraction of requests at or below each."""

    values: tuple[float, ...]
    fractions: tuple[float, ...]
    """``rank / n`` for each kept value (1-based rank): ascending, the last 1.0."""
    requests: int
    """How many requests the CDF is over (before thinning)."""


@dataclass(frozen=True, slots=True)
class CellLatency:
    """One measured cell's TTFT and TPOT distributions, and the panel (model · workload) it is drawn in."""

    cell_id: str
    label: str
    panel: str
    ttft: Cdf
    """Time to first token, ms."""
    tpot: Cdf
    """Time per output token after the first, ms (requests of two tokens or more)."""


def panel_name(cell: Cell) -> str:
    """The panel a cell is drawn in: its model and workload, as the report's frontier figures are titled."""
    return f"{cell.server.model_name} · {cell.workload_name}"


def cdf(values: Iterable[float], max_points: int = MAX_POINTS) -> Cdf:
    """The empirical CDF of ``values``, thinned to ``max_points`` ranks evenly spaced from the first to the last."""
    ordered = sorted(values)
    n = len(ordered)
    if n <= max_points:
        ranks: Iterable[int] = range(n)
    else:
        ranks = sorted({round(k * (n - 1) / (max_points - 1)) for k in range(max_points)})
    kept = list(ranks)
    return Cdf(values=tuple(ordered[i] for i in kept), fractions=tuple((i + 1) / n for i in kept), requests=n)


def measured_records(store: Store, cell: Cell) -> list[RequestRecord]:
    """The cell's measured, completed requests over every launch stored (warm-up and failures left out)."""
    return [record for path in store.records_paths(cell) for record in read_jsonl(path)
            if record.ok and not record.warmup]


def cell_latency(store: Store, cell: Cell) -> CellLatency | None:
    """The cell's TTFT and TPOT CDFs; None when it has no completed request on disk."""
    records = measured_records(store, cell)
    ttft = [r.ttft * 1000 for r in records if r.ttft is not None]
    if not ttft:
        return None
    tpot = [r.tpot * 1000 for r in records if r.tpot is not None]
    return CellLatency(cell_id=cell.cell_id, label=cell.label, panel=panel_name(cell), ttft=cdf(ttft), tpot=cdf(tpot))


def latencies(store: Store, cells: Iterable[Cell]) -> tuple[CellLatency, ...]:
    """Each cell's distributions, in the order given; cells with no completed request on disk are left out."""
    return tuple(found for cell in cells if (found := cell_latency(store, cell)) is not None)
