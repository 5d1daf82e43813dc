"""The explorer's data: one point per measured cell on its recipe's frontier (the report's own), hover text that
carries the cell's figures and its prediction, and the earlier runs of the matrix from the results history as
overlays, newest first; a history that is off or unreadable leaves the overlays out and says why."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.plan import Plan
from harness.report.context import ReportContext, build_context
from harness.report.explorer import ExplorerData, explorer_data
from harness.store import Store
from harness.verdict import write_verdicts

from tests.support.explored_run import (
    DECLINED,
    DECLINED_REASON,
    EARLIER,
    EXPLORED_MATRIX,
    FIGURES,
    GPUS,
    MISSING_FROM_OLDEST,
    explored_run,
    key,
)


@dataclass(frozen=True)
class Explored:
    plan: Plan
    store: Store
    context: ReportContext
    data: ExplorerData


def _explored(root: Path, history: str | None = None) -> Explored:
    matrix = root / "matrix.yaml"
    matrix.write_text(EXPLORED_MATRIX)
    plan, store = explored_run(matrix, root, history)
    write_verdicts(plan, store, record_run=True)
    context = build_context(plan, store)
    return Explored(plan, store, context, explorer_data(context, store))


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory) -> Explored:
    """The run judged (and recorded: the history holds it and its two earlier runs), its explorer's data."""
    return _explored(tmp_path_factory.mktemp("explored"))


def test_every_measured_cell_is_one_point_of_its_recipe(explored: Explored) -> None:
    data, plan = explored.data, explored.plan
    assert sorted(p.cell_id for p in data.points) == sorted(c.cell_id for c in plan.cells)
    assert {p.recipe for p in data.points} == {s.name for s in explored.context.cost.series} == {
        "vllm/bf16/off", "vllm/bf16/mtp2"}
    assert data.panels == ("m · w",) and data.device_unit == "GPU" and data.x_slo == pytest.approx(40.0)
    cells = {c.cell_id: c for c in plan.cells}
    for point in data.points:
        out, tpot = FIGURES[key(cells[point.cell_id])]
        assert point.tok_s_per_device == pytest.approx(out / GPUS)
        assert point.interactivity == pytest.approx(1000.0 / tpot)
    assert all(p.on_frontier for p in data.points)  # each recipe's c4 is faster per GPU and slower per user


def test_the_hover_text_carries_the_cells_figures_and_its_prediction(explored: Explored) -> None:
    cells = {c.cell_id: c for c in explored.plan.cells}
    hover = {key(cells[p.cell_id]): p.hover for p in explored.data.points}
    shown = hover[("off", 1)]
    assert shown.startswith("<b>m/vllm/bf16/tp1/off/w/c1</b><br>recipe vllm/bf16/off · concurrency 1")
    assert "100.0 output tok/s per GPU · 50.0 tok/s/user" in shown
    assert "predicted (aiconfigurator): TTFT 40.0 ms · TPOT 25.0 ms · 640.0 output tok/s" in shown
    assert "measured ÷ predicted: TTFT 1.25× · TPOT 0.80× · out tok/s 1.25×" in shown
    assert hover[DECLINED].endswith(f"no prediction: {DECLINED_REASON}") and "predicted (" not in hover[DECLINED]


def test_earlier_runs_become_overlays_newest_first(explored: Explored) -> None:
    data = explored.data
    assert [o.name for o in data.overlays] == ["2026-11-02 09:00 · c0ffee02", "2026-11-01 09:00 · c0ffee01"]
    stamp = explored.store.read_run_stamp()
    assert stamp is not None and stamp.run_id not in {o.run_key for o in data.overlays}
    cells = {c.cell_id: c for c in explored.plan.cells}
    for overlay, (_, _, level) in zip(data.overlays, reversed(EARLIER), strict=True):
        keys = {key(cells[p.cell_id]) for p in overlay.points}
        assert keys == set(FIGURES) - ({MISSING_FROM_OLDEST} if level == EARLIER[0][2] else set())
        for point in overlay.points:
            out, tpot = FIGURES[key(cells[point.cell_id])]
            assert point.tok_s_per_device == pytest.approx(out * level / GPUS)
            assert point.interactivity == pytest.approx(1000.0 * level / tpot)
            assert f"that run ÷ this run: {level:.2f}× output tok/s per GPU" in point.hover
    assert "holds 3 run(s) of t on this machine" in data.history


def test_each_measured_cell_has_its_latency_distributions(explored: Explored) -> None:
    assert [c.cell_id for c in explored.data.latency] == [c.cell_id for c in explored.plan.cells]


def test_without_a_history_no_run_is_overlaid(tmp_path: Path) -> None:
    data = _explored(tmp_path, history="none").data
    assert data.overlays == () and "is off for this run" in data.history and len(data.points) == 4


def test_an_unreadable_history_is_said_not_raised(explored: Explored, tmp_path: Path) -> None:
    junk = tmp_path / "history.sqlite"
    junk.write_bytes(b"not a database, " * 64)
    store = Store(explored.store.dir.parent, explored.store.matrix_name, lock_dir=explored.store.lock_dir,
                  history=f"sqlite:///{junk}")
    data = explorer_data(explored.context, store)
    assert data.overlays == () and data.history.startswith("The results history could not be read (")
    assert data.points == explored.data.points
