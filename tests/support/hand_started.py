"""A server started the way a user starts one, outside the harness: its own process group, its log in a file, ready
when its health endpoint answers, and killed whole when the test is done. The deployments tests measure such servers
as deployments (the harness never launched them)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx

from tests.support.processes import mark_session


@contextlib.contextmanager
def started_by_hand(argv: Sequence[str], log: Path, port: int, env: Mapping[str, str] | None = None,
                    timeout_s: float = 900, headers: Mapping[str, str] | None = None) -> Iterator[str]:
    """``argv`` running until the block ends, its URL yielded once ``/health`` answers 200."""
    mark_session()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                env={**os.environ, **(env or {})}, process_group=0)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv[:4]} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/health", timeout=5, headers=dict(headers or {})).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"not ready after {timeout_s:.0f} s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
