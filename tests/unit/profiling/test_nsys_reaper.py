"""The watchdog's cleanup: processes carrying a capture's marker, and collector files, made since it began."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.profiling import leftover_pids, reap_collector
from harness.profiling.nsys_reaper import MARKER_ENV, one_capture_at_a_time


@pytest.fixture(autouse=True)
def not_beside_a_real_capture() -> Iterator[None]:
    """The Nsight Systems tests' lock (tests/integration/test_nsys_cpu.py): these tests stop what looks like a
    collector, and beside a real capture on another worker they stopped its nsys processes (2026-11-29)."""
    with (Path(tempfile.gettempdir()) / "harness-nsys-tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _sleeper(env: dict[str, str], new_session: bool = True) -> subprocess.Popen[bytes]:
    # a server as nsys leaves it: in a session of its own, with a child of its own
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
           "time.sleep(60)"
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env}, start_new_session=new_session)


def _wait_for_children(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()):
        time.sleep(0.05)


def test_the_marked_session_is_stopped_children_included_and_nothing_else() -> None:
    older = _sleeper({MARKER_ENV: "mine"})  # marked, but started before the capture
    time.sleep(1.2)
    since = time.time()
    mine = _sleeper({MARKER_ENV: "mine"})
    other = _sleeper({MARKER_ENV: "someone-else"})
    try:
        _wait_for_children(mine.pid)
        child = int(Path(f"/proc/{mine.pid}/task/{mine.pid}/children").read_text().split()[0])
        assert {mine.pid, child} <= set(leftover_pids(since, "mine"))
        done = reap_collector(since, "mine", places=())  # the machine's nsys files are a capture's, not this test's
        assert mine.wait(10) != 0 and any(line.startswith(f"stopped {mine.pid}") for line in done)
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
        assert other.poll() is None and older.poll() is None
    finally:
        for proc in (older, mine, other):
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
            proc.wait()


def test_collector_files_made_since_the_capture_are_removed_and_older_ones_kept(tmp_path: Path) -> None:
    old = tmp_path / "nsys-report-old.qdstrm"
    old.write_text("x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    since = time.time()
    new = tmp_path / "nsys-report-new.qdstrm"
    new.write_text("x")
    session = tmp_path / "quadd_session_1000042"
    (session / "streams").mkdir(parents=True)
    done = reap_collector(since, None, places=[(tmp_path, "nsys-report-*.qdstrm"), (tmp_path, "quadd_session_*")])
    assert old.exists() and not new.exists() and not session.exists()
    assert f"removed {new}" in done and f"removed {session}" in done


def test_nothing_left_reads_as_nothing_done(tmp_path: Path) -> None:
    assert reap_collector(time.time() + 3600, "none", places=[(tmp_path, "*")]) == []


def test_captures_on_one_machine_take_turns(tmp_path: Path) -> None:
    lock, held = tmp_path / "capture.lock", []

    async def capture(name: str) -> None:
        async with one_capture_at_a_time(lock, poll_s=0.01):
            held.append(f"{name} in")
            await asyncio.sleep(0.05)  # the other capture waits meanwhile, the event loop does not
            held.append(f"{name} out")

    async def both() -> None:
        await asyncio.gather(capture("a"), capture("b"))

    asyncio.run(both())
    assert held in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])


# on SIGTERM it starts another marked process (as a collector starts its importer on the way out), then exits; that
# one ignores SIGTERM, so only a second look and a SIGKILL stop it
_SPAWNS_ON_TERM = """
import signal, subprocess, sys, time
def spawn(*_):
    subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
                      'print(flush=True); time.sleep(60)'], start_new_session=True)
    time.sleep(0.5)
    sys.exit(0)
signal.signal(signal.SIGTERM, spawn)
print(flush=True)
time.sleep(60)
"""


def test_what_a_collector_starts_while_stopping_is_stopped_too_and_gone_on_return() -> None:
    since = time.time()
    first = subprocess.Popen([sys.executable, "-c", _SPAWNS_ON_TERM], env={**os.environ, MARKER_ENV: "late"},
                             stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert first.stdout is not None and first.stdout.readline() == b"\n"  # its handler is set
        done = reap_collector(since, "late", grace_s=1.0, places=())
        assert first.wait(10) == 0
        assert len([line for line in done if line.startswith("stopped ")]) == 2, done
        assert leftover_pids(since, "late") == []  # the late one is gone (or a zombie) when the reaper returns
    finally:
        for pid in leftover_pids(since, "late"):
            os.kill(pid, 9)
