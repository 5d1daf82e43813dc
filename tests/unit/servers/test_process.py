"""ServerProcess lifecycle against tiny real processes: ready, crash at start, timeout, cancel, reaping."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from harness.errors import LaunchError, ServerExited
from harness.servers import LaunchSpec, ServerProcess, free_port

# A server that spawns a grandchild (as vLLM spawns its engine core) and answers /health after a delay.
SERVER = textwrap.dedent("""
    import http.server, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[3], "w").write(str(child.pid))
    time.sleep(float(sys.argv[2]))
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    print("serving", flush=True)
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def gone(pid: int) -> bool:
    """Whether the process is gone once the group's SIGKILL took effect: a signal acts when its process is next
    scheduled, so a state read at once (or after a fixed sleep) on a loaded machine can still say it runs."""
    for _ in range(500):
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.02)
    return False


def spec(port: int, child_file: Path, delay: float = 0.2) -> LaunchSpec:
    return LaunchSpec(argv=(sys.executable, "-c", SERVER, str(port), str(delay), str(child_file)))


async def test_ready_then_whole_group_reaped(tmp_path: Path) -> None:
    port = free_port()
    srv = ServerProcess(spec(port, tmp_path / "child"), "127.0.0.1", port, tmp_path / "server.log", 30)
    async with srv:
        assert srv.alive and srv.ready_after_s is not None
        async with httpx.AsyncClient() as client:
            assert (await client.get(srv.base_url + "/health")).status_code == 200
        child = int((tmp_path / "child").read_text())
        assert pid_alive(child)
    assert not srv.alive
    assert await gone(child), "the engine's child process must die with the server"
    assert "serving" in (tmp_path / "server.log").read_text()


async def test_server_leads_its_own_group_inside_the_harness_session(tmp_path: Path) -> None:
    # Its own group: stop() reaches its engine workers. The harness's session: Linux autogroups share CPU time
    # between sessions, and a client in another session than a saturating server was starved of a core.
    port = free_port()
    async with ServerProcess(spec(port, tmp_path / "child"), "127.0.0.1", port, tmp_path / "s.log", 30) as srv:
        assert srv._proc is not None
        pid = srv._proc.pid
        assert os.getpgid(pid) == pid != os.getpgid(0)
        assert os.getsid(pid) == os.getsid(0)


async def test_crash_at_start_fails_fast_with_log_tail(tmp_path: Path) -> None:
    argv = (sys.executable, "-c", "import sys; print('ValueError: bad flag --foo', file=sys.stderr); sys.exit(3)")
    srv = ServerProcess(LaunchSpec(argv=argv), "127.0.0.1", free_port(), tmp_path / "server.log", 60)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ServerExited) as info:
        async with srv:
            pass
    assert loop.time() - started < 10
    assert "bad flag --foo" in info.value.log_tail


# an API server that lost its port to another process: uvicorn logs it and stops, the engine's processes stay up
_PORT_TAKEN = ("import sys, time; print(\"[2026-11-29 14:54:39] ERROR:    [Errno 98] error while attempting to "
               "bind on address ('127.0.0.1', 43551): address already in use\", file=sys.stderr, flush=True); "
               "time.sleep(600)")


async def test_a_port_taken_before_the_bind_fails_fast_and_reaps(tmp_path: Path) -> None:
    # an earlier launch's bind failure in the same (appended) log is not this launch's
    (tmp_path / "earlier.log").write_text("ERROR:    [Errno 98] error while attempting to bind on address\n")
    port = free_port()
    relaunch = ServerProcess(spec(port, tmp_path / "child"), "127.0.0.1", port, tmp_path / "earlier.log", 60)
    async with relaunch:
        assert relaunch.alive
    srv = ServerProcess(LaunchSpec(argv=(sys.executable, "-c", _PORT_TAKEN)), "127.0.0.1", free_port(),
                        tmp_path / "server.log", 600)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(LaunchError, match="was taken by another process") as info:
        async with srv:
            pass
    assert loop.time() - started < 60 and not srv.alive  # not the 600 s startup timeout
    assert "address already in use" in info.value.log_tail


async def test_never_ready_times_out_and_reaps(tmp_path: Path) -> None:
    port = free_port()
    srv = ServerProcess(spec(port, tmp_path / "child", delay=600), "127.0.0.1", port, tmp_path / "s.log", 1.5)
    with pytest.raises(LaunchError, match="not ready"):
        async with srv:
            pass
    assert not srv.alive
    assert await gone(int((tmp_path / "child").read_text()))


async def test_cancelled_boot_reaps(tmp_path: Path) -> None:
    port = free_port()
    srv = ServerProcess(spec(port, tmp_path / "child", delay=600), "127.0.0.1", port, tmp_path / "s.log", 60)

    async def boot() -> None:
        async with srv:
            pass

    task = asyncio.create_task(boot())
    while not (tmp_path / "child").exists():
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not srv.alive
    assert await gone(int((tmp_path / "child").read_text()))


def zombie(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] == "Z"


def slow_reaper(monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop) -> None:
    """The order a loaded machine produced (a 1-in-5 failure under two busy processes): the group's SIGKILL has
    made the leader a zombie before asyncio's child watcher (a thread blocked in waitpid) got a core. Here killpg
    returns only once the leader is a zombie, and the watcher reaps only after the loop has finished that step,
    so whatever the step does to the zombie happens first, every time."""
    real_killpg, real_waitpid = os.killpg, os.waitpid
    killed = threading.Event()

    def killpg(pgid: int, sig: int) -> None:
        real_killpg(pgid, sig)
        if sig == signal.SIGKILL:
            while not zombie(pgid) and pid_alive(pgid):  # the state it needs, not a time
                time.sleep(0.01)
            killed.set()

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        if options == 0 and threading.current_thread() is not threading.main_thread():  # the watcher's thread
            killed.wait()
            stepped = threading.Event()
            loop.call_soon_threadsafe(stepped.set)  # runs once the loop is done with the killing step
            stepped.wait()
        return real_waitpid(pid, options)

    monkeypatch.setattr(os, "killpg", killpg)
    monkeypatch.setattr(os, "waitpid", waitpid)


@pytest.mark.parametrize("reaper", ["as-scheduled", "slow"])
async def test_server_ignoring_sigterm_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 reaper: str) -> None:
    """A server that ignores SIGTERM is SIGKILLed after the grace period, and its exit status is the kill's: stop()
    must not reap it behind the child watcher's back (which reported 255 where -SIGKILL was expected)."""
    import harness.servers.process as process

    monkeypatch.setattr(process, "TERM_GRACE_S", 0.5)
    if reaper == "slow":
        slow_reaper(monkeypatch, asyncio.get_running_loop())
    port = free_port()
    code = "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); exec(sys.argv.pop(1))"
    argv = (sys.executable, "-c", code, SERVER, str(port), "0", str(tmp_path / "child"))
    srv = ServerProcess(LaunchSpec(argv=argv), "127.0.0.1", port, tmp_path / "s.log", 30)
    async with srv:
        pass
    assert not srv.alive
    assert srv._proc is not None and srv._proc.returncode == -signal.SIGKILL
