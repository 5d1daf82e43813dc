"""What the exporters read of a stored run: each measured cell once, each launch of one measured on several, what
belongs to the cell only on its pooled entry, and every cell without figures with the reason."""

from __future__ import annotations

from harness.export import stored_cells
from harness.export.stored_cell import plan_cells, run_files

from tests.support.exported_run import PROMPTS, StoredRun


def test_measured_cells_and_their_launches_are_found_and_the_rest_skipped_with_a_reason(run: StoredRun) -> None:
    cells, skipped = stored_cells(run.plan, run.store)
    assert [(c.cell.cell_id, c.launch) for c in cells] == [
        (run.single.cell_id, None), (run.launched.cell_id, None), *((run.launched.cell_id, k) for k in range(3))]
    reasons = {s.cell.cell_id: s.reason for s in skipped}
    assert reasons == {run.failed.cell_id: "failed: server exited while the cell ran", run.unrun.cell_id: "not run"}


def test_records_are_the_measured_ones_and_the_cells_own_files_go_with_the_pooled_entry(run: StoredRun) -> None:
    cells, _ = stored_cells(run.plan, run.store)
    single, pooled, *launches = cells
    assert not any(r.warmup for r in single.records)
    assert sorted(r.prompt_tokens for r in single.records if r.ok) == sorted(PROMPTS)
    assert len([r for r in single.records if not r.ok]) == 1
    assert single.telemetry is not None and single.parity is not None and single.parity.passed is True
    assert len(pooled.records) == 3 * len(launches[0].records)  # the pooled entry reads every launch's records
    assert all(c.telemetry is None and c.parity is None for c in launches)
    assert [c.summary.output_throughput for c in launches] == [s.output_throughput for s in run.launch_summaries]
    assert pooled.summary.launches == 3 and pooled.name == run.launched.cell_id
    assert launches[2].name == f"{run.launched.cell_id}_launch2"


def test_the_runs_own_files_are_read_once(run: StoredRun) -> None:
    files = run_files(run.plan, run.store)
    stamp = run.store.read_run_stamp()
    assert stamp is not None and files.run_id == stamp.run_id
    assert files.lock is not None and files.gate is not None and files.gate.result is not None
    assert set(files.predictions) == {run.single.cell_id}
    assert files.declined == {run.launched.cell_id: "no MTP data for this GPU"}


def test_a_run_with_nothing_but_results_reads_as_no_lock_gate_or_predictions(run: StoredRun) -> None:
    for path in (run.store.run_lock_path, run.store.gate_path, run.store.predictions_path, run.store.run_stamp_path):
        path.unlink()
    files = run_files(run.plan, run.store)
    assert (files.run_id, files.lock, files.gate, files.predictions, files.declined) == (None, None, None, {}, {})
    assert len(stored_cells(run.plan, run.store)[0]) == 5


def test_plan_cells_are_the_plans_in_order(run: StoredRun) -> None:
    assert plan_cells(run.plan, run.store) == run.plan.cells
