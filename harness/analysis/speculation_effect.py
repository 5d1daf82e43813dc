"""What speculation bought: each speculative cell paired with its ``off`` twin, and where it stops paying.

A speculative cell's twin is the cell that differs only in ``speculation: off`` (same model, runtime, precision,
parallelism, workload and concurrency). From the pair come the TPOT speedup and the throughput ratio; along a
series (one model, runtime, precision, parallelism, workload and speculation method) ordered by concurrency they
show the batch size beyond which verifying drafts costs more than it saves. Acceptance is the server's, measured
as counter deltas around each cell by the pipeline; this module only reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.cost import PricedCell
from harness.metrics.cell_summary import CellSummary, LatencyStats
from harness.plan.cells import Cell


@dataclass(frozen=True, slots=True)
class SpeculationPair:
    speculative: PricedCell
    off: PricedCell

    @property
    def tpot_speedup(self) -> float | None:
        """off median TPOT / speculative median TPOT (>1: speculation made decoding faster)."""
        return _ratio(_median(self.off.summary, "tpot_ms"), _median(self.speculative.summary, "tpot_ms"))

    @property
    def throughput_ratio(self) -> float | None:
        """speculative output tok/s / off output tok/s."""
        spec, off = self.speculative.summary, self.off.summary
        return _ratio(spec.output_throughput if spec else None, off.output_throughput if off else None)

    @property
    def acceptance_rate(self) -> float | None:
        summary = self.speculative.summary
        return summary.speculation.acceptance_rate if summary is not None and summary.speculation is not None else None

    @property
    def series(self) -> str:
        """The pair's series: everything but concurrency."""
        return series_name(self.speculative.cell)


def series_name(cell: Cell) -> str:
    """A speculative cell's series: model, runtime, precision, parallelism, speculation and workload."""
    s = cell.server
    return f"{s.model_name} · {s.runtime} · {s.precision.label} · {s.parallel.label} · {s.speculation.label} " \
           f"· {cell.workload_name}"


def _median(summary: CellSummary | None, field: str) -> float | None:
    stats: LatencyStats | None = getattr(summary, field) if summary is not None else None
    return stats.median if stats is not None else None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def _off_twin(cell: Cell) -> dict[str, Any]:
    """The selector of a speculative cell's ``off`` pair."""
    return {"model": cell.server.model_name, "runtime": cell.server.runtime, "precision": cell.server.precision.label,
            "parallel": cell.server.parallel.label, "workload": cell.workload_name, "concurrency": cell.concurrency,
            "speculation": "off"}


def speculation_pairs(rows: Sequence[PricedCell]) -> list[SpeculationPair]:
    """Every speculative cell that has an ``off`` twin in ``rows``, in row order."""
    pairs = []
    for row in rows:
        if row.cell.server.speculation.is_off:
            continue
        twin = _off_twin(row.cell)
        off = next((r for r in rows if r.cell.matches(twin)), None)
        if off is not None:
            pairs.append(SpeculationPair(speculative=row, off=off))
    return pairs


@dataclass(frozen=True, slots=True)
class BreakEven:
    """Where one series stops paying: the first measured concurrency at which ``metric`` is at or below 1."""

    series: str
    metric: str
    concurrency: int | None
    """None: it paid at every concurrency measured."""
    paid_up_to: int | None
    """The highest concurrency below ``concurrency`` (or measured at all) at which it paid; None: it never paid."""


def by_series(pairs: Sequence[SpeculationPair]) -> dict[str, list[SpeculationPair]]:
    """Pairs grouped by series, each ordered by concurrency."""
    out: dict[str, list[SpeculationPair]] = {}
    for pair in pairs:
        out.setdefault(pair.series, []).append(pair)
    return {name: sorted(group, key=lambda p: p.speculative.cell.concurrency) for name, group in out.items()}


def break_even(pairs: Sequence[SpeculationPair], metric: str = "throughput_ratio") -> list[BreakEven]:
    """Per series, the concurrency from which ``metric`` (a SpeculationPair ratio, >1 = pays) no longer exceeds 1."""
    found = []
    for name, group in by_series(pairs).items():
        measured = [(p.speculative.cell.concurrency, v) for p in group if (v := getattr(p, metric)) is not None]
        if not measured:
            continue
        stop = next((c for c, v in measured if v <= 1.0), None)
        paid = [c for c, v in measured if v > 1.0 and (stop is None or c < stop)]
        found.append(BreakEven(name, metric, stop, max(paid) if paid else None))
    return found
