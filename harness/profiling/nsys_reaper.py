"""What a hung or killed Nsight Systems capture leaves behind, found and removed.

``nsys profile`` does not keep its pieces in its own process group (measured on 2022.4, 2026-11-25 and
2026-11-26): the profiled application runs in a session of its own under ``nsys-launcher``, and the collector's
``nsys --start-agent`` is a daemon (parent 1, its own session) that later starts ``QdstrmImporter``. Killing
``nsys profile``'s group therefore leaves the server serving and the agent spinning near half a core, plus
``/tmp/nsys-report-*.qdstrm``, ``/dev/shm/quadd-agent-instance-*`` and the session's scratch under
``/tmp/nvidia/nsight_systems/``. Whatever starts nsys calls ``reap_collector`` once the capture is over, whichever
way it ended: it stops every nsys process started since the capture began and every process that carries the
capture's marker in its environment (``MARKER_ENV``, set on the launch and inherited by the server and its engine
workers whatever their titles and parents become), then removes the files they made. Nothing older is touched.

Nothing newer can be told apart: the agents' sessions and files carry no capture's mark. So captures on one machine
take turns (``one_capture_at_a_time``, a lock in the machine's temporary space held from launch to reap): two at
once, as two pytest workers or two harness runs on one host would start them, reaped each other's collector
mid-window (nsys exited 1, "End of file", 2026-11-28).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

_NSIGHT_TMP = Path("/tmp/nvidia/nsight_systems")
TEMP_FILES: tuple[tuple[Path, str], ...] = (
    (Path("/tmp"), "nsys-report-*.qdstrm"), (Path("/tmp"), "nsys_termination_status_*"),
    (Path("/tmp"), "injection_config_*"), (Path("/dev/shm"), "injection_config_*"),
    (Path("/dev/shm"), "quadd-agent-instance-*"), (Path("/dev/shm"), "sem.nsys_sem_*"),
    (_NSIGHT_TMP, "quadd_session_*"),
    # the collector's log holds the whole environment of the profiled process: never leave it behind
    (_NSIGHT_TMP / "telemetry-0", "nsys-*.qdlog"))
_MARKS = ("nsys", "quadd", "nsight-systems")
CAPTURE_LOCK = Path(tempfile.gettempdir()) / "harness-nsys-capture.lock"
MARKER_ENV = "HARNESS_NSYS_CAPTURE"
"""Set to a capture's own id on the launch under nsys; its processes are found by it."""


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the name (state first); empty when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rindex(")") + 2:].split()  # the name in parentheses may hold spaces


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").rstrip("\0").split("\0")
    except OSError:
        return []


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def _processes(since: float) -> list[tuple[int, list[str]]]:
    """(pid, argv) of every process started at or after ``since``, this one excepted."""
    boot, ticks, me, found = _boot_time(), os.sysconf("SC_CLK_TCK"), os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        fields = _stat(int(entry.name))
        if len(fields) > 19 and boot + int(fields[19]) / ticks >= since - 1.0:  # start time rounds down to a tick
            found.append((int(entry.name), _argv(int(entry.name))))
    return found


def _zombie(pid: int) -> bool:
    fields = _stat(pid)
    return not fields or fields[0] == "Z"


def leftover_pids(since: float, marker: str | None = None) -> list[int]:
    """Nsight Systems processes (CLI, launcher, agents, importer) started since ``since``, and every process
    started since then whose environment holds ``MARKER_ENV=marker``."""
    tag = f"{MARKER_ENV}={marker}".encode() if marker else None
    return sorted(pid for pid, argv in _processes(since)
                  if (argv and any(mark in argv[0].lower() for mark in _MARKS))
                  or (tag is not None and tag in _environ(pid).split(b"\0")))


def _files_since(since: float, places: Iterable[tuple[Path, str]]) -> list[Path]:
    found = []
    for folder, pattern in places:
        for path in folder.glob(pattern):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime >= since - 1.0:
                    found.append(path)
    return found


REAP_PASSES = 3
"""How many times the reaper looks again for what a capture left, after stopping what it found."""


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def _wait_gone(pids: list[int], within_s: float) -> list[int]:
    """Those of ``pids`` still running (not gone, not a zombie) after at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = [p for p in pids if not _zombie(p)]
    return pids


def reap_collector(since: float, marker: str | None = None, *, grace_s: float = 2.0,
                   places: Iterable[tuple[Path, str]] = TEMP_FILES) -> list[str]:
    """Stop what a capture begun at ``since`` left running (SIGTERM, SIGKILL after ``grace_s``) and remove the
    temporary files made since then; returns what was done, one line each (empty when nothing was left)."""
    done: list[str] = []
    # a few passes: a collector being stopped can start another process (its importer, a daemon) after the scan
    # that found it, and a process killed with SIGKILL is listed until the kernel has torn it down
    for _ in range(REAP_PASSES):
        found = {pid: " ".join(_argv(pid))[:120] for pid in leftover_pids(since, marker)}
        if not found:
            break
        done += [f"stopped {pid}: {argv}" for pid, argv in found.items()]
        _signal_all(found, signal.SIGTERM)
        pids = _wait_gone(list(found), grace_s)
        _signal_all(pids, signal.SIGKILL)
        _wait_gone(pids, grace_s)
    for path in _files_since(since, places):
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            done.append(f"removed {path}")
    return done


@contextlib.asynccontextmanager
async def one_capture_at_a_time(lock: Path = CAPTURE_LOCK, poll_s: float = 0.2) -> AsyncIterator[None]:
    """Hold this machine's capture lock (``flock``: released when its descriptor closes, so by a crash too) from a
    capture's launch to its reap; a second capture waits here, without blocking the event loop."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(poll_s)
        yield
    finally:
        os.close(fd)
