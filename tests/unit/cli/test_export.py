"""``harness export`` in-process: a stored CPU run written as Benchmark Reports that llm-d's published schema
accepts, as a Parquet table where asked, and a run with nothing measured refused with exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_matrix
from harness.export import BR_SCHEMA_PATH
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_ok, summary


def test_export_writes_valid_benchmark_reports_and_a_table(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = write_matrix(BASE_MATRIX)
    plan = expand(load_matrix(matrix))
    out = tmp_path / "reports"
    store = Store(out, plan.matrix.name)
    measured, failed = plan.cells
    store_ok(store, measured, summary(100.0, 20.0))
    store_failed(store, failed)
    args = ["export", str(matrix), "--out", str(out), "--lock-dir", str(tmp_path / "lock")]

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "exported 1 measured cells as br: 1 files in" in result.output
    assert f"not exported: {failed.label}: failed: " in result.output
    (path,) = (out / "t" / "export" / "br").iterdir()
    validator = Draft202012Validator(json.loads(BR_SCHEMA_PATH.read_text()),
                                     format_checker=Draft202012Validator.FORMAT_CHECKER)
    report = yaml.safe_load(path.read_text())
    assert not list(validator.iter_errors(report))
    assert report["scenario"]["stack"][0]["standardized"]["accelerator"]["count"] == 0  # a CPU server

    table = CliRunner().invoke(app, [*args, "--format", "parquet", "--dest", str(tmp_path / "nb")])
    assert table.exit_code == 0, table.output
    assert (tmp_path / "nb" / "cells.parquet").is_file()


def test_nothing_measured_and_an_unknown_format_exit_2(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = write_matrix(BASE_MATRIX)
    args = ["export", str(matrix), "--out", str(tmp_path / "reports"), "--lock-dir", str(tmp_path / "lock")]
    empty = CliRunner().invoke(app, args)
    assert empty.exit_code == 2 and "no measured cell to export" in empty.output
    unknown = CliRunner().invoke(app, [*args, "--format", "xlsx"])
    assert unknown.exit_code == 2 and "unknown export format 'xlsx'" in unknown.output
