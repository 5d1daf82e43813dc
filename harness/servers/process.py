"""A server process owned by an async context manager: launched, awaited until ready, and always reaped.

The process leads its own process group, so its engine workers die with it. It stays in the harness's session on
purpose: Linux's scheduler autogroups (on by default in most distributions) share CPU time between sessions, and
on a 2-core machine the server saturates, a load client in another session than the server waited for a core up
to 1.2 s at p99 of its loop's ticks while using 3% of one; in the server's session, under 4 ms. Readiness is a poll
of the health endpoint raced against the process exiting, so a server that crashes at start fails in
seconds, not at the timeout. On every exit path — normal, error, cancellation (Ctrl-C), SIGTERM — the whole
group gets SIGTERM, then SIGKILL after a grace period. As a last line, an ``atexit`` hook kills any group
still alive if the interpreter exits without unwinding (e.g. a second Ctrl-C).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from harness.errors import LaunchError, ServerExited

log = logging.getLogger(__name__)
_LIVE_GROUPS: set[int] = set()
TERM_GRACE_S = 15.0


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """What ServerProcess needs to start and watch one server: an argv list (never a shell string)."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    health_path: str | None = "/health"
    """Polled until it answers 200; None for a process that serves no HTTP (a follower rank of a replica)."""


def _kill_live_groups() -> None:
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(_kill_live_groups)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file (what a failed cell records as its reason)."""
    if not path.exists():
        return ""
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - 64_000))
        return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])


BIND_FAILED = ("error while attempting to bind on address",)
"""What a server's log says when another process took its port between ``free_port`` and its bind: uvicorn's
words, as vLLM's and SGLang's API servers log them (``[Errno 98] error while attempting to bind on address
('127.0.0.1', 43551): address already in use``; seen on a fresh clone's make test, 2026-11-29). Only uvicorn's
message: an engine's own ports (torch.distributed, ZMQ) may log their retries in other words."""


def bind_failed(log_tail: str) -> bool:
    """Whether the server's log says it could not bind its port: its API server is gone, while its engine
    processes may stay up, so it would never answer and the launch would wait out its whole startup timeout."""
    lowered = log_tail.lower()
    return any(words in lowered for words in BIND_FAILED)


class ServerProcess:
    """``async with ServerProcess(spec, host, port, log_path, timeout) as srv:`` -> a ready server at srv.base_url."""

    def __init__(self, spec: LaunchSpec, host: str, port: int, log_path: Path, startup_timeout_s: float) -> None:
        self.spec, self.host, self.port, self.log_path = spec, host, port, log_path
        self.startup_timeout_s = startup_timeout_s
        self.base_url = f"http://{host}:{port}"
        self.ready_after_s: float | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._log_start = 0
        self._paused = False

    async def __aenter__(self) -> ServerProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log.info("launching: %s", " ".join(self.spec.argv))
        with self.log_path.open("ab") as log_file:
            self._log_start = log_file.tell()  # the log is appended to: a relaunch reads only its own lines
            log_file.write(f"$ {' '.join(self.spec.argv)}\n".encode())
            log_file.flush()
            self._proc = await asyncio.create_subprocess_exec(
                *self.spec.argv, stdin=asyncio.subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                env={**os.environ, **self.spec.env}, process_group=0,
            )
        _LIVE_GROUPS.add(self._proc.pid)
        if self.spec.health_path is None:
            return self
        try:
            await self._wait_ready()
        except BaseException:
            # BaseException: a cancelled boot (Ctrl-C while loading) must reap the server too.
            await self.stop()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def metrics_urls(self) -> list[str]:
        """Where the engine's own ``/metrics`` is read (a composite server reads its parts)."""
        return [self.base_url]

    @property
    def gone_reason(self) -> str:
        """What a cell whose server went away records."""
        return "server exited while the cell ran"

    async def confirm_lost(self, grace_s: float = 5.0) -> None:
        """The server stopped answering: wait ``grace_s`` for its exit to be reaped, and stop what is left if it
        has not exited (a hung engine serves no later cell either). Afterwards ``alive`` is False."""
        if self._proc is None or self._proc.returncode is not None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._proc.wait()), grace_s)
        except TimeoutError:
            log.warning("server %s stopped answering but did not exit; stopping it", self.base_url)
        await self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def _logged_since_launch(self) -> str:
        """What this launch wrote to its log (its last 64 kB)."""
        with contextlib.suppress(OSError), self.log_path.open("rb") as fh:
            fh.seek(max(self._log_start, fh.seek(0, os.SEEK_END) - 64_000))
            return fh.read().decode(errors="replace")
        return ""

    @property
    def pid(self) -> int | None:
        """The leader's pid (also its process group's id), once launched."""
        return self._proc.pid if self._proc is not None else None

    async def wait_exit(self, timeout_s: float) -> int | None:
        """The exit code once the process ends by itself within ``timeout_s``; None if it is still running (a
        wrapper such as ``nsys profile`` that ends its server and then writes its report)."""
        if self._proc is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(self._proc.wait()), timeout_s)
        except TimeoutError:
            return None

    async def _wait_ready(self) -> None:
        assert self._proc is not None
        started = time.monotonic()
        exited = asyncio.ensure_future(self._proc.wait())
        try:
            async with httpx.AsyncClient(timeout=5.0) as client:
                while time.monotonic() - started < self.startup_timeout_s:
                    if exited.done():
                        raise ServerExited(f"server exited with code {self._proc.returncode} before it was ready",
                                           self.log_tail())
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(f"{self.base_url}{self.spec.health_path}")).status_code == 200:
                            self.ready_after_s = time.monotonic() - started
                            log.info("ready after %.1f s at %s", self.ready_after_s, self.base_url)
                            return
                    if bind_failed(self._logged_since_launch()):
                        raise LaunchError(f"port {self.port} was taken by another process before the server bound "
                                          "it (a race with another program on this machine); fix: run again, the "
                                          "launch picks another port", self.log_tail())
                    await asyncio.wait({exited}, timeout=1.0)
        finally:
            if not exited.done():
                exited.cancel()
        raise LaunchError(f"server not ready after {self.startup_timeout_s:.0f} s", self.log_tail())

    def pause(self) -> None:
        """Freeze the whole process group (SIGSTOP): a ready server that waits for its turn then takes no CPU
        from the one being measured, whatever its engine does while idle (its stats loggers, its queues' polling).
        ``resume`` thaws it; ``stop`` thaws it too, so that it can act on its SIGTERM."""
        if self._proc is not None and self.alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGSTOP)
                self._paused = True

    def resume(self) -> None:
        """Thaw a paused server's process group (SIGCONT); nothing for one that is not paused."""
        if self._proc is not None and self._paused:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGCONT)
            self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    async def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it after a grace period; safe to call twice."""
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        self.resume()  # a frozen group acts on its SIGTERM only once thawed
        cancelled = False
        try:
            # shield: a cancellation arriving now must not skip the reaping below; it is re-raised after it
            await asyncio.shield(asyncio.wait_for(proc.wait(), TERM_GRACE_S))
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            cancelled = True
        # Engine workers may outlive the parent; kill whatever is left of the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        if proc.returncode is None:
            # A leader that left its group. Not proc.kill(): it polls first (bpo-38630), and polling reaps a leader
            # the group kill already made a zombie, out from under asyncio's child watcher, whose wait then
            # reports 255 ("Unknown child process") instead of -SIGKILL. os.kill leaves the reaping to the watcher.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(proc.wait())
        _LIVE_GROUPS.discard(pgid)
        log.info("server %s stopped (exit %s)", self.base_url, proc.returncode)
        if cancelled:
            raise asyncio.CancelledError
