"""Faults under load, each followed by a rerun, against the fake server: a server killed mid-cell at concurrency 16,
a disk that fills under the results while a run goes on, and a stored summary.json corrupted after the fact.

Each test states what the rerun kept and what it redid, and counts what is on disk and in the results history: no
finished result is lost, and none is held twice (a redone cell replaces its rows, its records are those of the one
run that finished it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

REQUESTS = 32  # each cell: 1 warm-up + 32 measured requests
MATRIX = """
name: faults
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 32, warmup_requests: 1}}
axes:
  runtime: [fake]
  concurrency: [{concurrency}]
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: [{extra}]}}}}
"""


@pytest.fixture
def faults_matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Callable[..., Path]:
    return lambda concurrency="1, 16, 4", extra="": write_matrix(
        MATRIX.format(model=tiny_tokenizer_dir, concurrency=concurrency, extra=extra))


def stored(out: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    """Each stored cell result by label, and the number of request records on disk beside it."""
    found = {}
    for path in sorted((out / "faults" / "runs").glob("*/summary.json")):
        data = json.loads(path.read_text())
        data["records_on_disk"] = len((path.parent / "records.jsonl").read_text().splitlines())
        found[data["label"]] = data
    return found


def history_rows(out: Path) -> tuple[int, list[tuple[str, str]]]:
    """The history's runs of this matrix, and its cell rows (label, status), read from the SQLite file itself."""
    with contextlib.closing(sqlite3.connect(out / "history.sqlite")) as db:
        runs = db.execute("select count(*) from runs where matrix = 'faults'").fetchone()[0]
        cells = db.execute("select label, status from cells order by label").fetchall()
    return runs, cells


def test_a_server_killed_at_concurrency_16_costs_that_cell_and_the_rerun_redoes_it_alone(
        faults_matrix: Callable[..., Path], tmp_path: Path) -> None:
    # A server serves c1 (1 + 32 requests), then dies on request 50, with the c16 cell's 16 requests in flight; c4
    # runs on a relaunched server. The rerun's server serves c16 alone (33 requests) and lives.
    matrix, out = faults_matrix(extra='"--die-after-requests", "49"'), tmp_path / "reports"
    first = cli.harness("run", str(matrix), "--out", out)
    assert first.returncode == 1, first.stderr
    found = stored(out)
    assert {label: r["status"] for label, r in found.items()} == {
        "m/fake/bf16/tp1/off/w/c1": "ok", "m/fake/bf16/tp1/off/w/c16": "failed", "m/fake/bf16/tp1/off/w/c4": "ok"}
    assert "exited while the cell ran" in found["m/fake/bf16/tp1/off/w/c16"]["reason"]
    assert "this run added 3 cell(s), replaced 0, already held 0" in first.stdout
    kept = {label: r["summary"] for label, r in found.items() if r["status"] == "ok"}

    rerun = cli.harness("run", str(matrix), "--out", out)
    assert rerun.returncode == 0, rerun.stderr
    assert "1 cells run, 0 failed, 2 already complete" in rerun.stdout
    assert "this run added 0 cell(s), replaced 1, already held 2" in rerun.stdout
    found = stored(out)
    assert all(r["status"] == "ok" for r in found.values()) and len(found) == 3
    assert {label: found[label]["summary"] for label in kept} == kept  # kept as they were, not measured again
    assert all(r["records_on_disk"] == 1 + REQUESTS for r in found.values())  # the killed try's records are gone
    assert found["m/fake/bf16/tp1/off/w/c16"]["summary"]["completed"] == REQUESTS
    assert history_rows(out) == (1, sorted((label, "ok") for label in found))
    assert not live_pids("harness_testing.fake_engine")


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the block: a real filesystem that fills, unmounted after."""
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=False)


def fill(path: Path) -> Path:
    """Write zeros into ``path/filler`` until the filesystem refuses: what another process filling the disk does."""
    filler = path / "filler"
    with contextlib.suppress(OSError), filler.open("wb") as fh:
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    return filler


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting the small tmpfs needs root (CI runs as root)")
def test_a_disk_that_fills_mid_run_stops_it_with_the_fix_and_the_rerun_finishes_it(
        faults_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = faults_matrix(concurrency="1, 2, 4", extra='"--itl-ms", "5"')
    with small_disk(tmp_path / "reports", "8m") as out:
        run = subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not list((out / "faults" / "runs").glob("*/summary.json")) and time.monotonic() < deadline:
                time.sleep(0.05)  # wait for the state (a finished cell), bounded so a hang fails instead of blocking
            filler = fill(out)  # the disk fills while the next cell runs
            stdout, stderr = run.communicate(timeout=120)
        finally:
            if run.poll() is None:  # a failed wait: SIGTERM unwinds the run and reaps its server
                run.send_signal(signal.SIGTERM)
                run.communicate(timeout=60)
        assert run.returncode == 2, stderr
        assert "Traceback" not in stderr, stderr[-3000:]
        assert "no space left" in stderr and f"writing {out}/faults/" in stderr and "fix:" in stderr, stderr[-2000:]
        assert not live_pids("harness_testing.fake_engine")
        assert not list(out.rglob(".summary.json.*"))  # no half-written result left behind
        kept = {label: r["summary"] for label, r in stored(out).items()}
        assert kept and all(r is not None for r in kept.values()) and len(kept) < 3
        assert not (out / "history.sqlite").exists() or history_rows(out)[0] == 0  # the run never reached it

        filler.unlink()  # the fix the message names: free space, then rerun
        rerun = cli.harness("run", str(matrix), "--out", out)
        assert rerun.returncode == 0, rerun.stderr
        assert f"{3 - len(kept)} cells run, 0 failed, {len(kept)} already complete" in rerun.stdout
        assert "this run added 3 cell(s), replaced 0, already held 0" in rerun.stdout
        found = stored(out)
        assert len(found) == 3 and all(r["status"] == "ok" for r in found.values())
        assert {label: found[label]["summary"] for label in kept} == kept
        assert all(r["records_on_disk"] == 1 + REQUESTS for r in found.values())
        assert history_rows(out) == (1, sorted((label, "ok") for label in found))
    assert not live_pids("harness_testing.fake_engine")


def test_a_corrupt_summary_is_redone_and_held_once(faults_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix, out = faults_matrix(concurrency="1, 16"), tmp_path / "reports"
    first = cli.harness("run", str(matrix), "--out", out)
    assert first.returncode == 0, first.stderr
    before = stored(out)
    victim = out / "faults" / "runs" / before["m/fake/bf16/tp1/off/w/c16"]["cell_id"] / "summary.json"
    victim.write_text(victim.read_text()[:100])  # cut short, as a full disk or a bad copy leaves a file

    rerun = cli.harness("run", str(matrix), "--out", out)
    assert rerun.returncode == 0, rerun.stderr
    assert "1 cells run, 0 failed, 1 already complete" in rerun.stdout
    assert "this run added 0 cell(s), replaced 1, already held 1" in rerun.stdout
    found = stored(out)
    assert found["m/fake/bf16/tp1/off/w/c1"]["summary"] == before["m/fake/bf16/tp1/off/w/c1"]["summary"]
    assert found["m/fake/bf16/tp1/off/w/c16"]["status"] == "ok"
    assert all(r["records_on_disk"] == 1 + REQUESTS for r in found.values())
    assert history_rows(out) == (1, sorted((label, "ok") for label in found))
    assert not live_pids("harness_testing.fake_engine")


def test_a_second_run_of_the_same_store_is_refused_naming_the_first(faults_matrix: Callable[..., Path],
                                                                   tmp_path: Path) -> None:
    matrix, out = faults_matrix(concurrency="1"), tmp_path / "reports"
    first = subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock_file = out / "faults" / "writer.lock"
        deadline = time.monotonic() + 60
        while not (lock_file.is_file() and lock_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = cli.harness("run", str(matrix), "--out", out)
        assert second.returncode == 2, second.stderr
        assert f"another `harness run` is writing these results (pid {first.pid}" in second.stderr
    finally:
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert len(stored(out)) == 1  # the first run's cell, whole; the second wrote nothing
    again = cli.harness("run", str(matrix), "--out", out)  # the lock went with the first run
    assert again.returncode == 0 and "0 cells run, 0 failed, 1 already complete" in again.stdout, again.stderr
    assert not live_pids("harness_testing.fake_engine")
