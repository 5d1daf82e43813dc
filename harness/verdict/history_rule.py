"""The gate's second rule: the results history (``harness.history``) judges each gated figure by its series over
runs, beside the baseline comparison (``harness.verdict.gate``).

* A figure the baseline found ``ok`` or could not judge (``inconclusive``) whose series steps beyond the tolerance
  at the newest runs is ``regressed`` (``improved``), with the size of the step and its significance in the note.
* A cell the baseline does not hold (``new``) is judged by its history alone: each figure that stepped so.
* Otherwise the history is said in the note: a long flat series, a step within the tolerance, one the machine's
  own probe shares, or too few runs. A baseline verdict of ``regressed`` or ``improved`` is never overturned.
* On a machine the baseline file holds no entry for, the figures left inconclusive ("measured on another
  machine") are judged by this machine's history all the same: a series never mixes machines.
"""

from __future__ import annotations

from dataclasses import replace

from harness.config.gates import GateSpec
from harness.history import HistoryJudgement, Trend
from harness.metrics.gateable import gated_metric
from harness.plan.cells import Plan
from harness.verdict.gate import GateResult, ordered
from harness.verdict.gate_row import GateRow


def _joined(row: GateRow, trend: Trend | None) -> GateRow:
    if trend is None or trend.verdict == "absent":
        return row
    note = f"{row.note}; {trend.note}".strip("; ")
    if row.status in ("ok", "inconclusive") and trend.verdict in ("regressed", "improved"):
        return replace(row, status=trend.verdict, note=note, history=trend.verdict)
    return replace(row, note=note, history=trend.verdict)


def _new_cell_rows(label: str, cell_id: str, spec: GateSpec, history: HistoryJudgement) -> list[GateRow]:
    rows = []
    for name in spec.metrics:
        trend = history.trend(cell_id, name)
        if trend is None or trend.step is None or trend.verdict not in ("regressed", "improved"):
            continue
        gated = gated_metric(name)
        rows.append(GateRow(label, name, gated.metric.unit, gated.metric.direction, trend.step.before,
                            trend.series.values[-1], trend.verdict, trend.step.ratio,
                            note=f"not in the baseline; {trend.note}", history=trend.verdict))
    return rows


def with_history(result: GateResult, plan: Plan, spec: GateSpec, history: HistoryJudgement) -> GateResult:
    """The gate's rows with the history's verdicts joined in, reordered failures first."""
    cell_ids = {cell.label: cell.cell_id for cell in plan.cells}
    rows: list[GateRow] = []
    for row in result.rows:
        cell_id = cell_ids.get(row.label)
        if cell_id is None:
            rows.append(row)
        elif row.status == "new":
            rows += [row, *_new_cell_rows(row.label, cell_id, spec, history)]
        else:
            rows.append(_joined(row, history.trend(cell_id, row.metric)))
    return replace(result, rows=ordered(rows))
