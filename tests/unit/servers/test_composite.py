"""A server of several processes: ready when its parts and then its front are, reaped whole, followers included, on
every exit path."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import ServerExited
from harness.servers import LaunchSpec, ServerProcess, free_port
from harness.servers.composite import CompositeServer

HEAD = textwrap.dedent("""
    import http.server, sys
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")
FOLLOWER = LaunchSpec(argv=(sys.executable, "-c", "import time; time.sleep(600)"), health_path=None)


async def test_a_replica_is_ready_with_its_head_and_reaped_whole(tmp_path: Path) -> None:
    port = free_port()
    followers = [ServerProcess(FOLLOWER, "127.0.0.1", port, tmp_path / f"node{i}.log", 30) for i in (1, 2)]
    head = LaunchSpec(argv=(sys.executable, "-c", HEAD, str(port)))
    async with CompositeServer(head, followers, "127.0.0.1", port, tmp_path / "server.log", 30) as srv:
        assert srv.alive and all(f.alive for f in followers)
    assert not srv.alive and not any(f.alive for f in followers)


async def test_a_head_that_dies_at_start_stops_the_followers(tmp_path: Path) -> None:
    port = free_port()
    followers = [ServerProcess(FOLLOWER, "127.0.0.1", port, tmp_path / "node1.log", 30)]
    head = LaunchSpec(argv=(sys.executable, "-c", "raise SystemExit(3)"))
    with pytest.raises(ServerExited):
        async with CompositeServer(head, followers, "127.0.0.1", port, tmp_path / "server.log", 30):
            pass
    assert not followers[0].alive


async def test_a_lost_follower_makes_the_replica_not_alive(tmp_path: Path) -> None:
    port = free_port()
    short = LaunchSpec(argv=(sys.executable, "-c", "import time; time.sleep(0.3)"), health_path=None)
    followers = [ServerProcess(short, "127.0.0.1", port, tmp_path / "node1.log", 30)]
    head = LaunchSpec(argv=(sys.executable, "-c", HEAD, str(port)))
    async with CompositeServer(head, followers, "127.0.0.1", port, tmp_path / "server.log", 30) as srv:
        await asyncio.sleep(1.0)
        assert not srv.alive  # the cell loop stops on it, as on a dead single-node server
