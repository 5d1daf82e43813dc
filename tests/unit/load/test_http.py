"""The lean HTTP client's pool against real servers: keep-alive, a cancelled request's connection dropped, a
refused connection, and arrival stamped by the kernel end to end. Framing is tested on one connection
(``test_http_connection.py``)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from harness.endpoint_access import Grant, granted, origin_of
from harness.load.http import ConnectionPool
from harness.load.http_connection import ConnectionBroken
from harness_testing.loopback import LoopbackConfig, LoopbackServer

from tests.support.http_wire import EVENTS, STREAM_HEAD, Sink, canned, chunked, sse


async def test_keep_alive_reuses_one_connection() -> None:
    async with canned(STREAM_HEAD + chunked(sse(*EVENTS), 50)) as (url, connections):
        async with ConnectionPool(url) as pool:
            for _ in range(5):
                assert (await pool.post_events("/x", b"{}", Sink()))[0] == 200
                await asyncio.sleep(0.01)  # let the terminating chunk arrive and free the connection
    assert len(connections) == 1


async def test_a_server_that_refuses_or_is_not_plain_http_fails_before_any_response() -> None:
    pool = ConnectionPool("http://127.0.0.1:1")
    with pytest.raises(ConnectionBroken, match="cannot connect") as refused:
        await pool.post_events("/x", b"{}", Sink())
    assert not refused.value.responded
    with pytest.raises(ValueError, match="http:// and https:// only"):
        ConnectionPool("ftp://example.com")


async def test_a_cancelled_request_drops_its_connection() -> None:
    server = LoopbackServer(LoopbackConfig(itl_ms=50))
    async with server.serve() as url:
        async with ConnectionPool(url) as pool:
            body = json.dumps({"max_tokens": 50}).encode()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await pool.post_events("/v1/completions", body, Sink())
            await asyncio.sleep(0.05)
            assert not pool._idle  # never returned dirty to the pool
            assert (await pool.post_events("/v1/completions", json.dumps({"max_tokens": 2}).encode(), Sink()))[0] == 200


def _server_thread(events: list[tuple[float, bytes]]) -> tuple[str, threading.Thread]:
    """A blocking server in its own thread (so a busy client loop cannot delay it): answers one request with a
    chunked SSE body whose pieces are written after the given delays."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for delay, payload in events:
                time.sleep(delay)
                conn.sendall(chunked(payload, 1 << 16)[:-5])  # one chunk, without the terminating chunk
            conn.sendall(b"0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", thread


async def test_arrival_is_stamped_by_the_kernel_not_when_a_busy_client_reads() -> None:
    url, thread = _server_thread([(0.0, sse("a")), (0.3, sse("b")), (0.0, sse("[DONE]"))])
    stamps: list[float] = []

    def sink(data: bytes, at: float) -> bool:
        stamps.append(at)
        if data == b"a":
            time.sleep(0.6)  # the client is busy while "b" arrives at about +0.3 s
        return data == b"[DONE]"

    async with ConnectionPool(url) as pool:
        assert await pool.post_events("/v1/completions", b"{}", sink) == (200, b"")
    thread.join(5)
    gap = stamps[1] - stamps[0]
    assert 0.25 < gap < 0.45, f"'b' stamped {gap:.3f} s after 'a': stamped on read, not on arrival"




@asynccontextmanager
async def recording() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A server answering each request with a finished stream; the list keeps each request's head."""
    heads: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                heads.append(head)
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), 0)
                await reader.readexactly(length)
                writer.write(STREAM_HEAD + chunked(sse("[DONE]"), 64))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", heads
    finally:
        server.close()


async def test_the_granted_headers_go_in_every_request_head_to_that_origin_only() -> None:
    async with recording() as (granted_url, granted_heads), recording() as (other_url, other_heads):
        with granted([Grant(origin_of(granted_url), {"Authorization": "Bearer sk-test"})]):
            async with ConnectionPool(granted_url) as pool, ConnectionPool(other_url) as other:
                for _ in range(2):
                    assert (await pool.post_events("/v1/completions", b"{}", Sink()))[0] == 200
                assert (await other.post_events("/v1/completions", b"{}", Sink()))[0] == 200
    assert len(granted_heads) == 2 and all(b"\r\nAuthorization: Bearer sk-test\r\n" in h for h in granted_heads)
    assert granted_heads[0].endswith(b"Content-Length: 2\r\n\r\n")  # the head stays well-formed
    assert len(other_heads) == 1 and b"authorization" not in other_heads[0].lower()
