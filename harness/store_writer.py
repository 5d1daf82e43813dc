"""One ``harness run`` at a time writes a results directory: a second is refused, naming the first one's pid.

Two runs of the same matrix into the same ``--out`` would measure the same cells twice, on one machine at once,
and write the same files in turn. ``hold_store`` takes an exclusive ``flock`` on ``<results dir>/writer.lock`` for
the whole run and writes the holder's pid into it; the kernel releases the lock when the process exits, however it
exits, so a lock file left by a killed run (its pid dead) is simply taken again. Readers (``harness report``,
``gate``, ``export``) take no lock: every result file is written whole (``harness.atomic_write``), so a reader
sees a cell finished or not at all, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from harness.errors import StoreBusy

LOCK_NAME = "writer.lock"


def _holder(lock_file: Path) -> str:
    """What the lock file says about the run holding it: its pid, and the command when /proc shows it."""
    try:
        pid = lock_file.read_text().strip()
    except OSError:
        return "another process"
    if not pid.isdigit():
        return "another process"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return f"pid {pid}" + (f" ({command[:200]})" if command else "")


@contextlib.contextmanager
def hold_store(results_dir: Path) -> Iterator[Path]:
    """Hold ``results_dir`` for this process's run; ``StoreBusy`` naming the holder when another run holds it."""
    results_dir.mkdir(parents=True, exist_ok=True)
    lock_file = results_dir / LOCK_NAME
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreBusy(f"{results_dir}: another `harness run` is writing these results ({_holder(lock_file)})"
                            f"\n  fix: wait for it to finish (or stop it: kill its pid), then run again to resume; "
                            "or pass another --out to measure beside it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield lock_file
    finally:
        os.close(fd)  # releases the lock; the file stays, naming nobody once its pid is gone


__all__ = ["LOCK_NAME", "hold_store"]
