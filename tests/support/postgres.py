"""A real PostgreSQL server for the history tests, started from Debian's packages in a temporary directory, as the
Slurm tests start a real cluster: ``initdb`` and ``pg_ctl`` run as ``nobody`` when the tests run as root (PostgreSQL
refuses root), it listens on a Unix socket only (no TCP port), and it is stopped on every exit path."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PG_BIN = Path(os.environ.get("HARNESS_PG_BIN", "/usr/lib/postgresql/15/bin"))
PORT = 55432


def available() -> str | None:
    """Why no server can start here (None: it can): the binaries `make setup-test` installs are missing."""
    if not (PG_BIN / "initdb").exists():
        return f"no PostgreSQL at {PG_BIN} (make setup-test installs postgresql-15; HARNESS_PG_BIN points elsewhere)"
    return None


def _as_owner(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server whose data and socket live in a new directory under the system's temp dir (one the server's
    owner can reach: pytest's own are private to root); yields its SQLAlchemy URL (psycopg 3)."""
    owner = "nobody" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    data, socket = root / "data", root / "socket"
    socket.mkdir(parents=True)
    if owner:
        entry = pwd.getpwnam(owner)
        for path in (root, socket):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    log = root / "server.log"
    options = f"-k {socket} -p {PORT} -c listen_addresses='' -c fsync=off"
    try:  # every step inside: a start that fails half-way is still stopped and its directory removed
        subprocess.run(_as_owner([str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "harness",
                                  "--no-sync"], owner), check=True, capture_output=True)
        subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w",
                                  "start"], owner), check=True, capture_output=True)
        subprocess.run(_as_owner([str(PG_BIN.parent / "bin" / "createdb"), "-h", str(socket), "-p", str(PORT),
                                  "-U", "harness", "history"], owner), check=True, capture_output=True)
        yield f"postgresql+psycopg://harness@/history?host={socket}&port={PORT}"
    finally:
        if data.exists():
            subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                                     owner), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
