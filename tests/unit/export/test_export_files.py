"""``export_run``: each format's files under the store's export folder or the one given, and a run with nothing
measured, or a format that does not exist, refused with what to do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import HarnessError
from harness.export import EXPORT_FORMATS, export_run
from harness.plan import expand
from harness.store import Store

from tests.support.exported_run import StoredRun
from tests.support.matrices import BASE_MATRIX


def test_each_format_writes_under_the_stores_export_folder(run: StoredRun) -> None:
    assert EXPORT_FORMATS == ("br", "csv", "parquet")
    br = export_run(run.plan, run.store)
    assert (br.cells, br.launches, len(br.paths)) == (2, 3, 5)
    assert {p.parent for p in br.paths} == {run.store.export_dir / "br"}
    assert {s.cell.cell_id for s in br.skipped} == {run.failed.cell_id, run.unrun.cell_id}
    assert export_run(run.plan, run.store, "csv").paths == (run.store.export_dir / "cells.csv",)
    assert export_run(run.plan, run.store, "parquet").paths == (run.store.export_dir / "cells.parquet",)


def test_a_destination_is_honoured(run: StoredRun, tmp_path: Path) -> None:
    exported = export_run(run.plan, run.store, "br", tmp_path / "elsewhere")
    assert all(p.is_file() and p.parent == tmp_path / "elsewhere" / "br" for p in exported.paths)
    assert not run.store.export_dir.exists()


def test_an_unknown_format_and_a_run_with_nothing_measured_are_refused(
        run: StoredRun, write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="unknown export format 'json'; known: br, csv, parquet"):
        export_run(run.plan, run.store, "json")
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    with pytest.raises(HarnessError, match="no measured cell to export"):
        export_run(plan, Store(tmp_path / "empty", plan.matrix.name))
