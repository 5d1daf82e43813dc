"""Render a matrix's report from what is on disk: plan + stored results in, ``report.md`` out.

The report never computes a figure the run did not measure: every number comes from a cell's summary.json.
Speculative cells are shown beside their ``off`` pair (same model, runtime, precision, parallelism, workload
and concurrency), with the speed ratio computed from the two measured cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from harness.metrics import METRICS, CellSummary, LatencyStats
from harness.plan import Cell, Plan
from harness.store import CellResult, Store, now_iso, write_atomic

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True, slots=True)
class CellRow:
    cell: Cell
    result: CellResult | None

    @property
    def summary(self) -> CellSummary | None:
        return self.result.summary if self.result is not None and self.result.status == "ok" else None

    @property
    def status(self) -> str:
        return "not run" if self.result is None else self.result.status


@dataclass(frozen=True, slots=True)
class SpecPair:
    spec: CellRow
    off: CellRow

    @property
    def tpot_speedup(self) -> float | None:
        """off median TPOT / speculative median TPOT (>1: speculation made decoding faster)."""
        return _ratio(_median(self.off.summary, "tpot_ms"), _median(self.spec.summary, "tpot_ms"))

    @property
    def throughput_ratio(self) -> float | None:
        """speculative output tok/s / off output tok/s."""
        spec, off = self.spec.summary, self.off.summary
        return _ratio(spec.output_throughput if spec else None, off.output_throughput if off else None)


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


def spec_pairs(rows: list[CellRow]) -> list[SpecPair]:
    pairs = []
    for row in rows:
        if row.cell.server.speculation.is_off:
            continue
        twin = _off_twin(row.cell)
        off = next((r for r in rows if r.cell.matches(twin)), None)
        if off is not None:
            pairs.append(SpecPair(spec=row, off=off))
    return pairs


def fmt(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def build_context(plan: Plan, store: Store) -> dict[str, Any]:
    rows = [CellRow(cell, store.read_result(cell)) for cell in plan.cells]
    return {
        "matrix": plan.matrix, "generated_at": now_iso(), "rows": rows, "groups": plan.groups,
        "failed": [r for r in rows if r.result is not None and r.result.status == "failed"],
        "not_run": [r for r in rows if r.result is None], "pairs": spec_pairs(rows), "metrics": METRICS,
        "runs_dir": store.dir / "runs",
    }


def render_report(plan: Plan, store: Store) -> Path:
    """Write ``reports/<matrix>/report.md`` from the stored results; returns its path."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    text = env.get_template("report.md.j2").render(build_context(plan, store))
    write_atomic(store.report_path, text)
    return store.report_path
