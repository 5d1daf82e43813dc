"""The run-wide progress line: launches and cells projected from the plan and corrected as rounds form, the time
left from the plan's estimate and then corrected by the finished launches, the line's text, and where it goes (a
terminal line above the per-cell display, or a log line at most once a minute elsewhere), all on an injected clock."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from harness.analysis import estimate, group_estimate
from harness.config import load_matrix
from harness.pipeline import GroupWork, run_progress
from harness.pipeline import executors as executors_module
from harness.pipeline.executors import LocalRounds
from harness.pipeline.run_progress import EVERY_S, RunProgress, launch_seconds
from harness.plan import Plan, ServerGroup, expand
from harness.result_records import CellResult
from harness.store import Store

MATRIX = """
name: p
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
models:
  m: {id: org/m, routed_experts: 8, num_nextn_predict_layers: 0}
  n: {id: org/n, routed_experts: 8, num_nextn_predict_layers: 0}
workloads:
  w: {kind: random, input_tokens: 100, output_tokens: 100, num_requests: 40, warmup_requests: 0}
axes:
  concurrency: [4, 400]
estimate: {tok_s_per_user: 10, tok_s_per_replica: 1000, ttft_s: 1, server_start_s: 600}
launches: 2
more_launches: [{cells: {concurrency: 4}, launches: 3}]
"""
"""Two servers of two cells each, on two launches, the c4 cells on a third: 6 launches measuring 10 cells."""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def per_cell(plan: Plan, work: GroupWork) -> float:
    """A stand-in estimator: 100 s a cell, so the arithmetic is readable."""
    return 100.0 * len(work.cells)


@pytest.fixture
def plan(write_matrix: Callable[[str], Path]) -> Plan:
    return expand(load_matrix(write_matrix(MATRIX)))


def progress_of(plan: Plan, clock: Clock, finished: frozenset[str] = frozenset()) -> RunProgress:
    return RunProgress(plan, plan.rounds(), finished=finished, clock=clock, stream=io.StringIO(), live=False,
                       seconds=per_cell)


def first_round(plan: Plan) -> list[GroupWork]:
    return [GroupWork(g, g.cells, (), ()) for g in plan.groups]


def test_before_any_launch_the_raw_estimate_of_every_launch_the_plan_owes(plan: Plan) -> None:
    progress = progress_of(plan, Clock())
    # round 0 and 1: both servers with both cells (4 x 200 s); round 2: both servers with their c4 cell (2 x 100 s)
    assert estimate(plan).launches == 6
    assert progress.left_s() == pytest.approx(1000.0)
    assert progress.factor is None
    assert progress.line() == ("run: 0 of 6 server launches done, cells 0 of 10 done, 0.0 min elapsed, about 17 min "
                               "left (raw estimate from the plan's priors; no launch finished yet)")


def test_a_resumed_run_projects_only_the_cells_still_owed(plan: Plan) -> None:
    done = frozenset(c.cell_id for c in plan.cells if c.concurrency == 400)
    progress = progress_of(plan, Clock(), finished=done)
    assert progress.left_s() == pytest.approx(600.0)  # the c4 cells alone: 3 rounds x 2 servers x 100 s
    assert "cells 0 of 6 done" in progress.line()


def test_finished_launches_correct_the_rest_by_what_they_took(plan: Plan) -> None:
    clock = Clock()
    progress = progress_of(plan, clock)
    work = first_round(plan)
    progress.round_formed(0, work)
    progress.launch_started(work[0])
    clock.now += 300.0  # estimated at 200 s
    progress.launch_finished(work[0], cells=2)
    assert progress.factor == pytest.approx(1.5)
    assert progress.left_s() == pytest.approx(800.0 * 1.5)
    progress.launch_started(work[1])
    clock.now += 60.0  # a running launch counts what it has run already
    assert progress.left_s() == pytest.approx((200.0 * 1.5 - 60.0) + 600.0 * 1.5)
    label = plan.groups[1].server.label
    assert progress.line() == (f"run: server 2 of 6 ({label}), cells 2 of 10 done, 6.0 min elapsed, about 19 min "
                               "left (estimate corrected by 1 finished launch: x1.5)")


def test_rounds_as_they_form_replace_the_projection(plan: Plan) -> None:
    progress = progress_of(plan, Clock())
    progress.round_formed(0, first_round(plan)[:1])  # the other server's cells were complete already
    assert progress.left_s() == pytest.approx(200.0 + 400.0 + 200.0)
    assert "0 of 5 server launches done, cells 0 of 8 done" in progress.line()


def test_an_executor_that_reports_no_launch_has_its_round_counted_when_it_returns(plan: Plan) -> None:
    clock = Clock()
    progress = progress_of(plan, clock)
    progress.round_formed(0, first_round(plan))
    clock.now += 200.0  # two jobs side by side, 400 s of estimate in 200 s
    progress.round_finished()
    assert progress.factor == pytest.approx(0.5)
    assert progress.left_s() == pytest.approx(600.0 * 0.5)
    assert progress.line().startswith("run: 2 of 6 server launches done, cells 4 of 10 done")
    assert progress.line().endswith("(estimate corrected by 2 finished launches: x0.5)")


def test_the_last_line_says_only_what_was_done(plan: Plan) -> None:
    clock = Clock()
    progress = progress_of(plan, clock)
    for round_ in range(plan.rounds()):
        progress.round_formed(round_, [GroupWork(g, tuple(c for c in g.cells if plan.launches_of(c) > round_), (), ())
                                       for g in plan.groups])
        clock.now += 150 * 60.0
        progress.round_finished()
    assert progress.line() == "run: 6 of 6 server launches done, cells 10 of 10 done, 7.5 h elapsed"


def test_an_estimator_that_fails_leaves_the_time_left_unknown(plan: Plan, caplog: pytest.LogCaptureFixture) -> None:
    def broken(plan: Plan, work: GroupWork) -> float:
        raise ValueError("no price table")

    progress = RunProgress(plan, plan.rounds(), clock=Clock(), live=False, seconds=broken)
    assert progress.line().endswith("time left unknown (no estimate)")
    assert [r.getMessage() for r in caplog.records if r.name == run_progress.__name__] == [
        "no run-time estimate for the progress line: no price table"]


def test_off_a_terminal_it_is_logged_at_launches_and_at_most_once_a_minute(
        plan: Plan, caplog: pytest.LogCaptureFixture) -> None:
    clock, stream = Clock(), io.StringIO()
    progress = RunProgress(plan, plan.rounds(), clock=clock, stream=stream, seconds=per_cell)  # not a terminal
    caplog.set_level(logging.INFO, logger=run_progress.__name__)
    work = first_round(plan)
    progress.round_formed(0, work)
    progress.launch_started(work[0])
    clock.now += EVERY_S - 1
    progress.tick()
    assert len(caplog.records) == 1
    clock.now += 1
    progress.tick()
    progress.tick()  # not again within the minute
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.INFO]
    assert all(r.getMessage().startswith("run: server 1 of 6") for r in caplog.records)
    assert stream.getvalue() == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_it_takes_a_line_of_its_own_above_the_cell_display(
        plan: Plan, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    stream = Terminal()
    stream.write("\rm/c4: 3/40 requests")  # the per-cell display, mid-draw
    progress = RunProgress(plan, plan.rounds(), clock=Clock(), stream=stream, seconds=per_cell)
    caplog.set_level(logging.INFO, logger=run_progress.__name__)
    progress.emit()
    assert stream.getvalue() == "\rm/c4: 3/40 requests\r\x1b[K" + progress.line() + "\n"
    assert not caplog.records


def test_launch_seconds_are_the_groups_estimate(plan: Plan) -> None:
    group = plan.groups[0]
    hours, _, _ = group_estimate(plan, group)
    assert launch_seconds(plan, GroupWork(group, group.cells, (), ())) == pytest.approx(hours * 3600)
    one = ServerGroup(group.server, group.cells[:1])
    assert launch_seconds(plan, GroupWork(group, group.cells[:1], (), ())) == pytest.approx(
        group_estimate(plan, one)[0] * 3600)


async def test_local_rounds_report_each_launch_to_the_running_progress(
        plan: Plan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    seen: list[str] = []

    async def run_group(work: GroupWork, store: Store, matrix: object, *, launch: int | None = None,
                        ahead: object = None) -> Sequence[CellResult]:
        seen.append(progress.line())
        clock.now += 100.0
        return [CellResult(cell_id=c.cell_id, label=c.label, server_id=c.server.server_id, status="failed",
                           reason="r", started_at="s", finished_at="f") for c in work.cells]

    async def start_pair(*args: object) -> tuple[None, None]:  # nothing started ahead: the stub launches nothing
        return None, None

    monkeypatch.setattr(executors_module, "run_group", run_group)
    monkeypatch.setattr(executors_module, "start_pair", start_pair)
    progress = progress_of(plan, clock)
    executor = LocalRounds(plan, Store(tmp_path / "out", plan.matrix.name), "m.yaml")
    work = first_round(plan)
    assert run_progress.current() is None
    async with progress.running():
        assert run_progress.current() is progress
        progress.round_formed(0, work)
        await executor.run_round(work, 0)
        progress.round_finished()
    assert run_progress.current() is None
    assert [line.split(",")[0] for line in seen] == ["run: server 1 of 6 (" + plan.groups[0].server.label + ")",
                                                      "run: server 2 of 6 (" + plan.groups[1].server.label + ")"]
    assert progress.cells_done == 4 and progress.factor == pytest.approx(0.5)


async def test_the_run_ends_with_its_last_line_once(plan: Plan, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    progress = progress_of(plan, clock)
    work = first_round(plan)
    with caplog.at_level(logging.INFO, logger=run_progress.__name__):
        async with progress.running():
            progress.round_formed(0, work)
            for item in work:
                progress.launch_started(item)
                clock.now += 10.0
                progress.launch_finished(item, len(item.cells))
        shown = [r.getMessage() for r in caplog.records]
        async with progress.running():  # a launch finishing after the last line: the run's end shows it
            progress.round_finished()
            progress.cells_done += 1
    # each launch's start and end, and no second copy of the last one when the run ends
    assert len(shown) == 2 * len(work) and shown[-1].startswith(f"run: {len(work)} of 6 server launches done")
    assert len(caplog.records) == len(shown) + 1
