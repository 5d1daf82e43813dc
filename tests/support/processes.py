"""What lifecycle tests look for after a run: processes that outlived it, of this test session only.

Two test sessions can share a machine (a developer's `make test` beside CI's, or a fresh clone's), so "a fake server
is still alive" must mean one this session started. Every process the session starts inherits ``SESSION_ENV``
(``tests/conftest.py`` sets it once), including those re-parented to init after a leak, so it is found by its
environment, not by its ancestry.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

SESSION_ENV = "HARNESS_TEST_SESSION"
XDIST_WORKER = "PYTEST_XDIST_WORKER"
"""Set in each pytest-xdist worker (make test's lanes run their tests on several)."""


def mark_session() -> None:
    """Give this test session's processes (and their children, inheriting the environment) one token; each
    pytest-xdist worker (``PYTEST_XDIST_WORKER``, which inherits its controller's environment) gets its own, since its
    tests run beside the other worker's and must find only their own processes."""
    token = os.environ.setdefault(SESSION_ENV, uuid.uuid4().hex)
    worker = os.environ.get(XDIST_WORKER)
    if worker and not token.endswith(f"-{worker}"):
        os.environ[SESSION_ENV] = f"{token}-{worker}"


def _ours(proc: Path) -> bool:
    token = os.environ.get(SESSION_ENV)
    if token is None:
        return True  # no session token: every matching process counts, as before
    try:
        return f"{SESSION_ENV}={token}".encode() in (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def live_pids(*needles: str) -> list[int]:
    """PIDs of live (non-zombie) processes of this session whose argv contains every needle as a whole argument.

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
        if not zombie and all(n in argv for n in wanted) and _ours(proc):
            pids.append(int(proc.name))
    return pids


def titled_pids(prefix: str) -> list[int]:
    """PIDs of live processes of this session whose argv[0] starts with ``prefix``: the children of engines that
    retitle them (SGLang's ``sglang::scheduler``, ``sglang::detokenizer``, by setproctitle)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            title = (proc / "cmdline").read_bytes().split(b"\0")[0]
            zombie = (proc / "stat").read_text().split()[2] == "Z"
        except OSError:
            continue
        if not zombie and title.startswith(prefix.encode()) and _ours(proc):
            pids.append(int(proc.name))
    return pids
