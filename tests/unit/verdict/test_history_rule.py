"""The gate's history rule: a step at the newest runs regresses (improves) a figure the baseline found ok or could
not judge, never overturns a baseline verdict of regressed, judges a cell new to the baseline alone, and otherwise
says the history in the note; and through the verdict stage, against a real history database."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.calibration import Calibration
from harness.config import load_matrix
from harness.config.gates import HistorySpec
from harness.history import HistoryJudgement, Point, RunIdentity, RunInfo, Series, judge_trend, record
from harness.plan import Plan, expand
from harness.result_records import CellResult
from harness.store import Store
from harness.verdict import GateResult, GateRow, build_lock, write_verdicts
from harness.verdict.history_rule import with_history

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_ok, summary

FLAT = [1000.0, 1040.0, 980.0, 1010.0, 995.0, 1025.0, 1005.0, 990.0, 1015.0]


def judgement(cell_id: str, values: list[float], metric: str = "output_throughput") -> HistoryJudgement:
    points = tuple(Point(RunInfo(f"r{i}", f"2026-11-{i + 1:02d}", None, {}, None), (v,)) for i, v in enumerate(values))
    trend = judge_trend(Series(cell_id, "label", metric, points), "higher", 0.10, HistorySpec(), f"r{len(values) - 1}")
    return HistoryJudgement(len(values), (trend,))


def row(plan: Plan, status: str, metric: str = "output_throughput") -> GateRow:
    return GateRow(plan.cells[0].label, metric, "tok/s", "higher", 1000.0, 700.0, status, 0.7, 0.5, 1.1, 0.2)  # type: ignore[arg-type]


def result(*rows: GateRow) -> GateResult:
    return GateResult(rows=rows, provenance=(), tolerance=0.10, launches=3)


def plan_of(write_matrix: Callable[..., Path]) -> Plan:
    return expand(load_matrix(write_matrix(BASE_MATRIX)))


def test_a_step_at_the_newest_runs_decides_what_the_baseline_could_not(write_matrix: Callable[..., Path]) -> None:
    plan = plan_of(write_matrix)
    history = judgement(plan.cells[0].cell_id, FLAT + [700.0, 705.0])
    for status in ("inconclusive", "ok"):
        (joined,) = with_history(result(row(plan, status)), plan, plan.matrix.gates, history).rows
        assert joined.status == "regressed" and joined.history == "regressed" and "history: a step of -" in joined.note


def test_a_baseline_regression_stands_and_a_flat_history_is_said(write_matrix: Callable[..., Path]) -> None:
    plan = plan_of(write_matrix)
    rising = judgement(plan.cells[0].cell_id, FLAT + [1400.0, 1390.0])
    (kept,) = with_history(result(row(plan, "regressed")), plan, plan.matrix.gates, rising).rows
    assert kept.status == "regressed" and kept.history == "improved"
    flat = judgement(plan.cells[0].cell_id, FLAT)
    (said,) = with_history(result(row(plan, "inconclusive")), plan, plan.matrix.gates, flat).rows
    assert said.status == "inconclusive" and said.history == "flat" and "flat over the last 9 runs" in said.note


def test_a_cell_new_to_the_baseline_is_judged_by_its_history(write_matrix: Callable[..., Path]) -> None:
    plan = plan_of(write_matrix)
    new = replace(row(plan, "new", metric="cell"), unit="", direction="")
    history = judgement(plan.cells[0].cell_id, FLAT + [700.0, 705.0])
    rows = with_history(result(new), plan, plan.matrix.gates, history).rows
    assert [r.status for r in rows] == ["regressed", "new"]  # failures first
    assert rows[0].metric == "output_throughput" and "not in the baseline" in rows[0].note


def test_the_verdict_stage_records_and_judges_against_a_database(write_matrix: Callable[..., Path], tmp_path: Path,
                                                                 history_url: str) -> None:
    plan = plan_of(write_matrix)
    store = Store(tmp_path / "reports", plan.matrix.name, tmp_path / "lock", history_url)
    lock = build_lock(plan, store)
    earlier_values = FLAT + [660.0]  # earlier runs of this matrix on this machine, the last one already slower
    for i, value in enumerate(earlier_values):
        earlier = RunIdentity(f"earlier-{i}", plan.matrix.name, lock.matrix_sha256, lock.hardware, "0.1.0", None,
                              f"2026-11-{i + 1:02d}T00:00:00+00:00")
        cell = plan.cells[0]
        record(history_url, earlier, [CellResult(cell_id=cell.cell_id, label=cell.label, server_id="s", status="ok",
                                                 started_at=earlier.started_at, finished_at=earlier.started_at,
                                                 summary=summary(value, 10.0))], Calibration())
    store.begin_run(fresh=True)
    store_ok(store, plan.cells[0], summary(650.0, 10.0))  # this run: 35% slower, the step has held two runs
    verdict = write_verdicts(plan, store, record_run=True)
    assert verdict.history is not None and verdict.history.error is None
    assert verdict.history.recorded is not None and verdict.history.recorded.added == 1
    assert verdict.history.runs == len(earlier_values) + 1
    (changed,) = [t for t in verdict.history.changed if t.series.metric == "output_throughput"]
    assert changed.verdict == "regressed" and changed.series.cell_id == plan.cells[0].cell_id
    assert verdict.result is None and "baseline" in (verdict.error or "")  # no baseline committed: said, not faked
    again = write_verdicts(plan, store)  # re-judging records nothing
    assert again.history is not None and again.history.recorded is None
    assert again.history.runs == len(earlier_values) + 1
