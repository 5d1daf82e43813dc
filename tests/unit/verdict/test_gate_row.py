"""One gated figure against the baseline's launches: the verdict, its interval, and what the machine's speed and
another machine's baseline do to it."""

from __future__ import annotations

import pytest

from harness.config import GateSpec
from harness.metrics import gated_metric
from harness.verdict.baseline import BaselineCell
from harness.verdict.gate_row import MachineSpeed, RowRule, compare_row

STEADY = [100.0, 101.0, 99.0]


def _before(**values: list[float | None]) -> BaselineCell:
    return BaselineCell(label="c", status="ok", values=dict(values), machine_s=[0.25] * 3)


def test_a_clear_drop_regresses_and_a_steady_figure_passes() -> None:
    throughput = gated_metric("output_throughput")
    rule = RowRule(GateSpec())
    dropped = compare_row("c", throughput, _before(output_throughput=STEADY), [80.0, 81.0, 79.5], rule)
    assert dropped is not None and dropped.status == "regressed" and dropped.ratio == pytest.approx(0.8, abs=0.01)
    assert dropped.low is not None and dropped.high is not None and dropped.low < dropped.ratio < dropped.high
    steady = compare_row("c", throughput, _before(output_throughput=STEADY), [100.5, 99.5, 100.0], rule)
    assert steady is not None and steady.status == "ok" and steady.launches == (3, 3)


def test_a_figure_the_baseline_never_measured_is_no_row() -> None:
    assert compare_row("c", gated_metric("output_throughput"), _before(), [100.0] * 3, RowRule(GateSpec())) is None


def test_another_machines_baseline_shows_timings_without_judging_them() -> None:
    row = compare_row("c", gated_metric("output_throughput"), _before(output_throughput=STEADY), [50.0] * 3,
                      RowRule(GateSpec(), elsewhere="machine-b"))
    assert row is not None and row.status == "inconclusive" and "another machine (machine-b)" in row.note


def test_a_slow_machine_can_explain_a_timing_regression() -> None:
    slower = MachineSpeed(0.7, 0.65, 0.75)
    row = compare_row("c", gated_metric("output_throughput"), _before(output_throughput=STEADY), [80.0, 81.0, 79.5],
                      RowRule(GateSpec(), speed=slower))
    assert row is not None and row.status == "inconclusive" and "not attributable" in row.note
