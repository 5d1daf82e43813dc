"""The results history through the CLI, against the fake server: two runs leave two runs in the history (SQLite
under --out by default, and a real PostgreSQL through --history), a resumed run adds none, `harness history` prints
the series, and a database that is unreachable, corrupt or of another matrix is a clear error while the run's own
results are written all the same."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: fake
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [fake]
  concurrency: [1, 2]
server: {{startup_timeout_s: 60}}
"""


def harness(*args: str, out: Path, history: str | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--history", history] if history else []
    return cli.harness(*args, "--out", out, *extra)  # in-process; the run broken mid-way is the real executable


@pytest.fixture
def matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Path:
    return write_matrix(MATRIX.format(model=tiny_tokenizer_dir))


def test_two_runs_leave_two_runs_and_a_resume_adds_none(matrix: Path, tmp_path: Path, history_url: str) -> None:
    out = tmp_path / "reports"
    given = None if history_url.startswith("sqlite") else history_url  # SQLite: the default file under --out
    first = harness("run", str(matrix), "--again", out=out, history=given)
    assert first.returncode == 0, first.stderr
    assert "history:" in first.stdout and "1 run(s) of fake on this machine; this run added 2 cell(s)" in first.stdout
    if given is None:
        assert (out / "history.sqlite").is_file()
    second = harness("run", str(matrix), "--again", out=out, history=given)
    assert second.returncode == 0, second.stderr
    assert "measuring it again as a new run" in second.stdout and "2 run(s) of fake" in second.stdout

    cell_dir = next((out / "fake" / "runs").iterdir())
    (cell_dir / "summary.json").unlink()  # as if the second run had been interrupted before this cell
    resumed = harness("run", str(matrix), "--again", out=out, history=given)
    assert resumed.returncode == 0 and "1 cells run" in resumed.stdout, resumed.stdout
    assert "2 run(s) of fake" in resumed.stdout and "replaced 1, already held 1" in resumed.stdout

    shown = harness("history", str(matrix), out=out, history=given)
    assert shown.returncode == 0, shown.stderr
    assert "matrix fake on " in shown.stdout and ": 2 run(s)" in shown.stdout
    rows = [line for line in shown.stdout.splitlines() if line.startswith("| m/fake/")]
    assert len(rows) == 2 * 6  # two cells, the six gated figures of the default gate
    assert all("| 2 |" in row and "| short |" in row for row in rows), rows
    assert not live_pids("harness_testing.fake_engine")


def test_an_unreachable_database_stops_the_run_before_any_launch(matrix: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    ran = harness("run", str(matrix), out=out, history="postgresql+psycopg://harness:pw@127.0.0.1:9/history")
    assert ran.returncode == 2 and "cannot reach the history database" in ran.stderr and "fix:" in ran.stderr
    assert "pw@" not in ran.stderr and not (out / "fake" / "runs").exists()


def test_a_database_broken_mid_run_keeps_the_results_and_records_later(matrix: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    database = out / "history.sqlite"
    run = subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list((out / "fake" / "runs").glob("*/summary.json")) and time.monotonic() < deadline:
            time.sleep(0.1)  # wait for the state (a finished cell), bounded so a hang fails instead of blocking
        database.write_bytes(b"not a database " * 200)  # the history breaks while the run goes on
        stdout, stderr = run.communicate(timeout=180)
    finally:
        if run.poll() is None:  # a failed wait: SIGTERM unwinds the run and reaps its server
            run.send_signal(signal.SIGTERM)
            run.communicate(timeout=60)
    assert run.returncode == 2, stderr
    assert "not a SQLite database" in stderr and "mv " in stderr and "2 cells run, 0 failed" in stdout
    assert len(list((out / "fake" / "runs").glob("*/summary.json"))) == 2 and (out / "fake" / "report.md").exists()
    gate = json.loads((out / "fake" / "gate.json").read_text())
    assert "not a SQLite database" in gate["history"]["error"]

    database.unlink()  # the fix the message names: move it aside
    recorded = harness("history", str(matrix), "--record", out=out)
    assert recorded.returncode == 0 and ": 1 run(s)" in recorded.stdout, recorded.stderr
    assert not live_pids("harness_testing.fake_engine")


def test_history_of_another_matrix_names_what_the_database_holds(matrix: Path, tmp_path: Path,
                                                                 write_matrix: Callable[..., Path],
                                                                 tiny_tokenizer_dir: Path) -> None:
    out = tmp_path / "reports"
    assert harness("run", str(matrix), out=out).returncode == 0
    other = write_matrix(MATRIX.format(model=tiny_tokenizer_dir).replace("name: fake", "name: other"), "other.yaml")
    shown = harness("history", str(other), out=out)
    assert shown.returncode == 2 and "holds no run of matrix 'other'" in shown.stderr
    assert "fake on " in shown.stderr and "(1 run(s))" in shown.stderr and "fix:" in shown.stderr
    elsewhere = harness("history", str(matrix), "--machine", "gpu: B200 x8", out=out)
    assert elsewhere.returncode == 2 and "holds no run of matrix 'fake' on gpu: B200 x8;" in elsewhere.stderr
