"""What the verdict stage hands the history beside a cell's figures: each launch's stored expert load, found where the
run stored it (the cell's own directory for a run of one launch, ``launches/<k>/`` otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import expand
from harness.servers.expert_load_collectors import ExpertCounts
from harness.store import Store
from harness.telemetry import ExpertLoadRecord
from harness.verdict.judge_run import _expert_loads

from tests.support.matrices import BASE_MATRIX


def write(path: Path, scale: int) -> None:
    counts = ExpertCounts(collector="c", layers=(0,), experts=2, top_k=1, counts=((scale, scale),), rows=(2 * scale,))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ExpertLoadRecord(label="x", counts=counts, expected_rows=2 * scale, requests=1,
                                     measured_s=1.0).model_dump_json())


def test_each_launch_of_a_cell_is_read_where_it_was_stored(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    single, several = plan.cells[0], plan.cells[1]
    write(store.expert_load_path(single), 1)
    write(store.expert_load_path(several, 0), 2)
    write(store.expert_load_path(several, 2), 4)
    (only,) = _expert_loads(single, store, 1)
    assert only is not None and only.counts == ((1, 1),)
    found = _expert_loads(several, store, 3)
    assert [f.counts[0][0] if f else None for f in found] == [2, None, 4]
    assert _expert_loads(single, store, 0) == []
