"""The report's expert-load section from stored counts: a row per counted cell (its launches pooled), the cells that
stored a reason instead, a heatmap per server and workload, and each pair of workloads against the noise floor."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import Cell, expand
from harness.report.expert_load_section import expert_load_view
from harness.servers.expert_load_collectors import ExpertCounts
from harness.store import Store
from harness.telemetry import ExpertLoadRecord

from tests.support.matrices import BASE_MATRIX

MATRIX = BASE_MATRIX.replace("""workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}""", """workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}
  v: {kind: random, input_tokens: 32, output_tokens: 8, num_requests: 4, warmup_requests: 1}""") + """\
telemetry: {expert_load: true}
"""
ROUTING = {("w", 1): (50, 50, 50, 50), ("w", 2): (52, 48, 51, 49), ("v", 1): (120, 40, 20, 20)}


def write(store: Store, cell: Cell, launch: int | None, row: tuple[int, ...] | None) -> None:
    counts = ExpertCounts(collector="vLLM worker hook (checked on vLLM 0.32.0)", layers=(0, 1), experts=4, top_k=2,
                          counts=(row, row), rows=(sum(row) // 2,) * 2, hook_seconds=0.02) if row else None
    record = ExpertLoadRecord(label=cell.label, counts=counts, reason=None if row else "the collector could not be "
                              "read: refused", expected_rows=sum(row) // 2 if row else 50, requests=4, measured_s=1.0)
    path = store.expert_load_path(cell, launch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json())


def test_cells_heatmaps_and_workload_distances(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    for cell in plan.cells:
        row = ROUTING.get((cell.workload_name, cell.concurrency))
        for launch in (0, 1):  # two launches of every cell, pooled
            write(store, cell, launch, row)
    view = expert_load_view(plan, store)
    assert view.asked and sorted(r.label for r in view.rows) == sorted(
        c.label for c in plan.cells if (c.workload_name, c.concurrency) in ROUTING)
    (skewed,) = [r for r in view.rows if r.label.endswith("v/c1")]
    assert skewed.rows == 200 and skewed.expected == 200 and skewed.layers == 2 and skewed.experts == 4
    assert abs(skewed.worst_max_over_mean - 2.4) < 1e-9 and abs(skewed.hottest_share - 0.6) < 1e-9
    assert abs((skewed.overhead or 0) - 0.02) < 1e-9  # hook seconds over measured seconds, both launches
    assert [label for label, _ in view.missing] == [c.label for c in plan.cells if c.label.endswith("v/c2")]
    assert "refused" in view.missing[0][1]
    assert len(view.heatmaps) == 2 and all((store.dir / path).is_file() for _, path in view.heatmaps)
    (distance,) = view.distances
    assert distance.verdict == "routes differently" and distance.floor is not None
    assert view.logged == ()  # no balancer logged on a CPU


def test_a_logged_eplb_balance_is_shown_beside_the_counts(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    cell = plan.cells[0]
    assert cell.server.runtime == "vllm"
    store.write_server_log(cell, b"INFO [eplb_state.py:631] EPLB step: 3 for model M: avg_tokens=90.00, "
                                 b"max_tokens=120, balancedness=0.7500, steps until the next rearrangement: 9\n", 0)
    ((label, balance),) = expert_load_view(plan, store).logged
    assert label == cell.label and balance.steps == 1 and balance.balancedness == 0.75


def test_nothing_when_the_matrix_does_not_ask(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    view = expert_load_view(plan, Store(tmp_path / "reports", plan.matrix.name))
    assert not view.asked and not view.rows and not view.heatmaps
