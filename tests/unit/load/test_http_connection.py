"""One connection of the lean client over a socket pair: a response's framing split anywhere, an error status's
body, a body read until close, failures before and after the response started, and when the connection goes back
to its pool."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from harness.load.http_connection import Connection, ConnectionBroken, Exchange, Reply, retry_after_seconds

from tests.support.http_wire import EVENTS, STREAM_HEAD, Sink, chunked, sse


@dataclass
class Pool:
    """The connection's owner, as the pool is: told when it closes and when it is free again."""

    forgotten: list[Connection] = field(default_factory=list)
    released: list[Connection] = field(default_factory=list)

    def forget(self, conn: Connection) -> None:
        self.forgotten.append(conn)

    def release(self, conn: Connection) -> None:
        self.released.append(conn)


@dataclass
class Wire:
    """Our connection, the server's end of its socket, and the pool it reports to."""

    conn: Connection
    server: socket.socket
    pool: Pool

    async def answer(self, response: bytes, *, piece: int = 0, close: bool = False) -> None:
        """Read the request, then write ``response`` ``piece`` bytes at a time (0: at once), each piece its own
        read on our side."""
        assert self.server.recv(65536).startswith(b"POST /x HTTP/1.1")
        step = piece or len(response) or 1
        for i in range(0, len(response), step):
            self.server.sendall(response[i:i + step])
            for _ in range(3):  # the loop's selector sees the bytes and the reader callback runs
                await asyncio.sleep(0)
        if close:
            self.server.close()

    def request(self, sink: Sink) -> asyncio.Future[tuple[int, bytes]]:
        done: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self.conn.send(b"POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", Exchange(sink, done))
        return done


@asynccontextmanager
async def wire() -> AsyncIterator[Wire]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    pool = Pool()
    conn = Connection(pool, ours, asyncio.get_running_loop(), stamped=False)
    try:
        yield Wire(conn, theirs, pool)
    finally:
        conn.abort()
        theirs.close()


@pytest.mark.parametrize("piece", [0, 1, 7])
@pytest.mark.parametrize("chunk", [3, 64, 1000])
async def test_chunked_sse_split_anywhere(piece: int, chunk: int) -> None:
    async with wire() as w:
        sink = Sink()
        done = w.request(sink)
        await w.answer(STREAM_HEAD + chunked(sse(*EVENTS), chunk), piece=piece)
        assert await asyncio.wait_for(done, 5) == (200, b"")
    assert sink.events == EVENTS


async def test_a_finished_keep_alive_response_offers_the_connection_again() -> None:
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(STREAM_HEAD + chunked(sse("[DONE]"), 64))
        assert await asyncio.wait_for(done, 5) == (200, b"")
        assert w.pool.released == [w.conn] and not w.conn.closed and w.conn.exchange is None


async def test_error_status_returns_its_body() -> None:
    body = json.dumps({"error": {"message": "nope", "code": 400}}).encode()
    response = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    async with wire() as w:
        sink = Sink()
        done = w.request(sink)
        await w.answer(response, piece=9)
        assert await asyncio.wait_for(done, 5) == (400, body)
    assert sink.events == []


async def test_body_until_close_and_a_last_event_without_newline() -> None:
    response = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: {\"a\": 1}\n\ndata: [DONE]"
    async with wire() as w:
        sink = Sink()
        done = w.request(sink)
        await w.answer(response, piece=5, close=True)
        assert (await asyncio.wait_for(done, 5))[0] == 200
        assert w.conn.closed and w.pool.forgotten == [w.conn] and not w.pool.released  # the body ended with it
    assert sink.events == ['{"a": 1}', "[DONE]"]


async def test_connection_close_is_honoured_after_a_whole_response() -> None:
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(b"HTTP/1.1 503 Busy\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy")
        assert await asyncio.wait_for(done, 5) == (503, b"busy")
        assert w.conn.closed and not w.pool.released


async def test_failures_say_whether_the_response_had_started() -> None:
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(b"", close=True)
        with pytest.raises(ConnectionBroken) as before:
            await asyncio.wait_for(done, 5)
    assert not before.value.responded
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(STREAM_HEAD + b"5\r\ndata:", close=True)
        with pytest.raises(ConnectionBroken) as during:
            await asyncio.wait_for(done, 5)
    assert during.value.responded
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(b"garbage\r\n\r\n")
        with pytest.raises(ValueError, match="not an HTTP"):
            await asyncio.wait_for(done, 5)
        assert w.conn.closed and w.pool.forgotten == [w.conn]  # a malformed response: never reused


async def test_bytes_nobody_asked_for_close_the_connection() -> None:
    async with wire() as w:
        w.server.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
        for _ in range(3):
            await asyncio.sleep(0)
        assert w.conn.closed and w.pool.forgotten == [w.conn]


@pytest.mark.parametrize(("value", "seconds"), [
    ("2", 2.0), ("0.5", 0.5), (b" 3 ", 3.0), ("-4", 0.0), ("Wed, 21 Oct 2026 07:28:00 GMT", 1.0), ("soon", 1.0),
    (None, None),
])
def test_retry_after_reads_seconds_and_anything_else_as_one(value: str | bytes | None, seconds: float | None) -> None:
    assert retry_after_seconds(value) == seconds


async def test_a_429_carries_its_retry_after() -> None:
    body = b'{"error": "slow down"}'
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\ncontent-length: %d\r\n\r\n%s"
                       % (len(body), body))
        reply = await asyncio.wait_for(done, 5)
    assert reply == (429, body) and isinstance(reply, Reply) and reply.retry_after == 2.0
    async with wire() as w:
        done = w.request(Sink())
        await w.answer(b"HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n")
        unasked = await asyncio.wait_for(done, 5)
    assert unasked == (503, b"") and getattr(unasked, "retry_after", "missing") is None
