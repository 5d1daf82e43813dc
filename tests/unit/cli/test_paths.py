"""Every path a command takes is checked as it is parsed: exit 2 naming the option, the path and the fix, before
anything is written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.cli.paths import directory_problem, file_problem

from tests.support.matrices import BASE_MATRIX


@pytest.fixture
def matrix(write_matrix: Callable[..., Path]) -> Path:
    return write_matrix(BASE_MATRIX)


def refused(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_export_to_an_existing_file_is_refused_before_writing(matrix: Path, tmp_path: Path) -> None:
    dest = tmp_path / "taken.csv"
    dest.write_text("mine")
    output = refused(["export", str(matrix), "--out", str(tmp_path / "r"), "--dest", str(dest)])
    assert f"error: --dest {dest}: a file, where a directory is wanted" in output and "nothing was written" in output
    assert dest.read_text() == "mine" and not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["report", "gate", "export", "run", "history", "lock"])
def test_out_under_a_file_is_refused_by_every_command(command: str, matrix: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    output = refused([command, str(matrix), "--out", str(tmp_path / "f" / "reports")])
    assert f"--out {tmp_path / 'f' / 'reports'}: {tmp_path / 'f'} is a file" in output and "fix: " in output


@pytest.mark.parametrize("command", ["plan", "report", "run"])
def test_a_matrix_that_is_a_directory_is_refused(command: str, tmp_path: Path) -> None:
    assert f"matrix {tmp_path}: a directory, where a file is wanted" in refused([command, str(tmp_path)])


def test_lock_dir_and_history_of_the_wrong_kind_are_refused(matrix: Path, tmp_path: Path) -> None:
    (tmp_path / "lockfile").write_text("")
    assert "--lock-dir" in refused(["report", str(matrix), "--lock-dir", str(tmp_path / "lockfile")])
    output = refused(["report", str(matrix), "--out", str(tmp_path), "--history", f"sqlite:///{tmp_path}"])
    assert f"--history sqlite:///{tmp_path}: {tmp_path}: a directory, where a file is wanted" in output


def test_a_baseline_that_is_a_directory_is_refused_and_a_missing_one_is_not(matrix: Path, tmp_path: Path) -> None:
    assert "--baseline" in refused(["gate", str(matrix), "--out", str(tmp_path), "--baseline", str(tmp_path)])


def test_the_problems_in_plain_words(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert directory_problem(tmp_path / "new" / "deeper", write=True) is None  # made when written
    assert directory_problem(tmp_path / "file", write=True) == "a file, where a directory is wanted"
    assert file_problem(tmp_path, write=False) == "a directory, where a file is wanted"
    assert file_problem(tmp_path / "absent", write=False) == "no such file"
    assert file_problem(tmp_path / "absent", write=True) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes everywhere")
def test_no_permission_is_named(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert directory_problem(locked, write=True) == "this user may not write it"
    assert "may not be written" in (directory_problem(locked / "new", write=True) or "")
