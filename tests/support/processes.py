"""What lifecycle tests look for after a run: processes that outlived it."""

from __future__ import annotations

from pathlib import Path


def live_pids(*needles: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose argv contains every needle as a whole argument.

    Lifecycle tests assert this is empty after a run: no server may outlive the harness.
    """
    wanted = [n.encode() for n in needles]
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            zombie = (proc / "stat").read_text().split()[2] == "Z"
        except OSError:
            continue  # exited while we looked
        if not zombie and all(n in argv for n in wanted):
            pids.append(int(proc.name))
    return pids
