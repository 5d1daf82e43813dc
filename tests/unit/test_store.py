from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import StorageError
from harness.plan import Cell, expand
from harness.result_records import CellResult
from harness.store import Store, full_disk, now_iso, write_atomic

from tests.support.matrices import BASE_MATRIX


@pytest.fixture
def cell(write_matrix: Callable[..., Path]) -> Cell:
    return expand(load_matrix(write_matrix(BASE_MATRIX))).cells[0]


def result(cell: Cell, status: str) -> CellResult:
    return CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status=status,  # type: ignore[arg-type]
                      started_at=now_iso(), finished_at=now_iso(), reason=None if status == "ok" else "boom")


def test_only_ok_results_are_complete(cell: Cell, tmp_path: Path) -> None:
    store = Store(tmp_path, "t")
    assert not store.is_complete(cell)
    store.write_result(cell, result(cell, "failed"))
    assert not store.is_complete(cell)  # failures are retried by the next run
    store.write_result(cell, result(cell, "ok"))
    assert store.is_complete(cell)
    assert (store.cell_dir(cell) / "cell.json").exists()


def test_corrupt_summary_is_not_complete(cell: Cell, tmp_path: Path) -> None:
    store = Store(tmp_path, "t")
    store.cell_dir(cell).mkdir(parents=True)
    (store.cell_dir(cell) / "summary.json").write_text('{"cell_id": "trunc')
    assert not store.is_complete(cell)


def test_a_full_disk_is_a_storage_error_that_names_where_and_the_fix(tmp_path: Path) -> None:
    for code in (errno.ENOSPC, errno.EDQUOT):
        error = full_disk(OSError(code, os.strerror(code), str(tmp_path / "x.json")), tmp_path)
        assert isinstance(error, StorageError)
        assert str(tmp_path / "x.json") in str(error) and f"df -h {tmp_path}" in str(error) and "resume" in str(error)
    assert full_disk(OSError(errno.EACCES, "Permission denied"), tmp_path) is None  # any other fault shows whole


def test_atomic_write_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    write_atomic(target, "old")

    with pytest.raises(TypeError):
        write_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_launches_have_their_own_files_and_the_pool_decides_completion(cell: Cell, tmp_path: Path) -> None:
    from tests.support.stored_cells import store_launches, summary

    store = Store(tmp_path, "m")
    assert store.launch_dir(cell) == store.cell_dir(cell)
    assert store.records_path(cell, 2) == store.cell_dir(cell) / "launches" / "2" / "records.jsonl"
    result = CellResult(cell_id=cell.cell_id, label=cell.label, server_id="s", status="ok", started_at="t",
                        finished_at="t", summary=summary(100.0, 20.0))
    store.write_result(cell, result, 1)
    assert store.is_complete(cell, 1) and not store.is_complete(cell, 0) and not store.is_complete(cell)
    store.write_result(cell, result)
    assert store.is_complete(cell) and not store.is_complete(cell, launches=3)  # one launch, three asked for
    store_launches(store, cell, [summary(100.0, 20.0)] * 3)
    assert store.is_complete(cell, launches=3)
    store.clear_launches(cell)
    assert not store.is_complete(cell, 1) and store.is_complete(cell, launches=3)


def test_a_cells_records_are_its_own_file_else_every_launchs(cell: Cell, tmp_path: Path) -> None:
    store = Store(tmp_path, "t")
    assert store.records_paths(cell) == []
    for launch in (1, 0):
        write_atomic(store.records_path(cell, launch), "")
    assert store.records_paths(cell) == [store.records_path(cell, 0), store.records_path(cell, 1)]
    write_atomic(store.records_path(cell), "")
    assert store.records_paths(cell) == [store.records_path(cell)]  # a single launch's run stores the cell's own
    assert store.export_dir == tmp_path / "t" / "export"
