"""The lean HTTP client against real sockets: framing split anywhere, keep-alive, failures before and after
the response started."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from harness.load.http import ConnectionBroken, ConnectionPool, kernel_arrival
from harness.servers.loopback import LoopbackConfig, LoopbackServer


def _sse(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


def _chunked(body: bytes, size: int) -> bytes:
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@asynccontextmanager
async def canned(response: bytes, *, piece: int = 0, close: bool = False) -> AsyncIterator[tuple[str, list[int]]]:
    """A server answering every request with ``response``, written ``piece`` bytes at a time (0: at once)."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), 0)
                await reader.readexactly(length)
                step = piece or len(response)
                for i in range(0, len(response), step):
                    writer.write(response[i:i + step])
                    await writer.drain()
                    await asyncio.sleep(0)
                if close:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", connections
    finally:
        server.close()


class Sink:
    def __init__(self) -> None:
        self.events: list[str] = []

    def __call__(self, data: bytes, at: float) -> bool:
        self.events.append(data.decode())
        return data == b"[DONE]"


EVENTS = ['{"a": 1}', '{"b": "x\u2028y"}', "[DONE]"]
STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("piece", [0, 1, 7])
@pytest.mark.parametrize("chunk", [3, 64, 1000])
async def test_chunked_sse_split_anywhere(piece: int, chunk: int) -> None:
    async with canned(STREAM_HEAD + _chunked(_sse(*EVENTS), chunk), piece=piece) as (url, _):
        async with ConnectionPool(url) as pool:
            sink = Sink()
            assert await pool.post_events("/v1/completions", b"{}", sink) == (200, b"")
    assert sink.events == EVENTS


async def test_keep_alive_reuses_one_connection() -> None:
    async with canned(STREAM_HEAD + _chunked(_sse(*EVENTS), 50)) as (url, connections):
        async with ConnectionPool(url) as pool:
            for _ in range(5):
                assert (await pool.post_events("/x", b"{}", Sink()))[0] == 200
                await asyncio.sleep(0.01)  # let the terminating chunk arrive and free the connection
    assert len(connections) == 1


async def test_error_status_returns_its_body() -> None:
    body = json.dumps({"error": {"message": "nope", "code": 400}}).encode()
    response = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    async with canned(response) as (url, _):
        async with ConnectionPool(url) as pool:
            sink = Sink()
            assert await pool.post_events("/x", b"{}", sink) == (400, body)
    assert sink.events == []


async def test_body_until_close_and_a_last_event_without_newline() -> None:
    response = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"a\": 1}\n\ndata: [DONE]"
    async with canned(response, piece=5, close=True) as (url, _):
        async with ConnectionPool(url) as pool:
            sink = Sink()
            assert (await pool.post_events("/x", b"{}", sink))[0] == 200
    assert sink.events == ['{"a": 1}', "[DONE]"]


async def test_failures_say_whether_the_response_had_started() -> None:
    async with canned(b"", close=True) as (url, _):
        async with ConnectionPool(url) as pool:
            with pytest.raises(ConnectionBroken) as before:
                await pool.post_events("/x", b"{}", Sink())
    assert not before.value.responded
    async with canned(STREAM_HEAD + b"5\r\ndata:", close=True) as (url, _):
        async with ConnectionPool(url) as pool:
            with pytest.raises(ConnectionBroken) as during:
                await pool.post_events("/x", b"{}", Sink())
    assert during.value.responded
    async with canned(b"garbage\r\n\r\n") as (url, _):
        async with ConnectionPool(url) as pool:
            with pytest.raises(ValueError, match="not an HTTP"):
                await pool.post_events("/x", b"{}", Sink())
    pool = ConnectionPool("http://127.0.0.1:1")
    with pytest.raises(ConnectionBroken, match="cannot connect") as refused:
        await pool.post_events("/x", b"{}", Sink())
    assert not refused.value.responded
    with pytest.raises(ValueError, match="plain http"):
        ConnectionPool("https://example.com")


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
                conn.sendall(_chunked(payload, 1 << 16)[:-5])  # one chunk, without the terminating chunk
            conn.sendall(b"0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", thread


async def test_arrival_is_stamped_by_the_kernel_not_when_a_busy_client_reads() -> None:
    url, thread = _server_thread([(0.0, _sse("a")), (0.3, _sse("b")), (0.0, _sse("[DONE]"))])
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


def test_kernel_arrival_reads_the_timestamp_and_falls_back_to_now() -> None:
    now = time.perf_counter()
    wall = time.time() - 0.25
    stamp = struct.pack("@qq", int(wall), int((wall % 1) * 1e9))
    kind = getattr(socket, "SCM_TIMESTAMPNS", 35)
    assert kernel_arrival([(socket.SOL_SOCKET, kind, stamp)], now) == pytest.approx(now - 0.25, abs=0.01)
    assert kernel_arrival([], now) == now
    future = time.time() + 5
    ahead = struct.pack("@qq", int(future), 0)
    assert kernel_arrival([(socket.SOL_SOCKET, kind, ahead)], now) == now
