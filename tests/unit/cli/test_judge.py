"""`harness baseline` against a real git working tree: a baseline is the reference every later run is judged against,
so one made from uncommitted code is refused unless asked for, and the lock records which it was."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, summary

# The lock records the machine: each test runs as an AMD and as an Intel host (tests/conftest.py: host).
pytestmark = pytest.mark.usefixtures("host")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


def test_a_dirty_tree_is_refused_unless_allowed(write_matrix: Callable[..., Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.verdict.lock as lock

    repo = tmp_path / "checkout"  # stands in for the harness's own checkout
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "gate.py").write_text("TOLERANCE = 0.10\n")
    _git(repo, "add", "gate.py")
    _git(repo, "commit", "-q", "-m", "gate")
    monkeypatch.setattr(lock, "REPO_ROOT", repo)
    matrix = write_matrix(BASE_MATRIX)
    plan = expand(load_matrix(matrix))
    out, lock_dir = tmp_path / "reports", tmp_path / "lock"
    store = Store(out, plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, [summary(v, 20.0) for v in (100.0, 102.0, 98.0)])
    args = ["baseline", str(matrix), "--out", str(out), "--lock-dir", str(lock_dir)]
    baseline, locked = lock_dir / "t.baseline.json", lock_dir / "t.lock.json"

    (repo / "gate.py").write_text("TOLERANCE = 0.50\n")  # an uncommitted change to tracked code
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "harness.dirty" in refused.output and "--allow-dirty" in refused.output
    assert not baseline.exists() and not locked.exists()

    allowed = CliRunner().invoke(app, [*args, "--allow-dirty"])
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(locked.read_text())["harness"]["dirty"] is True  # the lock says what it was made from

    _git(repo, "commit", "-q", "-am", "looser gate")
    clean = CliRunner().invoke(app, args)
    assert clean.exit_code == 0, clean.output
    assert json.loads(locked.read_text())["harness"]["dirty"] is False
