"""One keep-alive HTTP/1.1 connection, read in the event loop's reader callback: the response parsed as its bytes
arrive, each server-sent event handed to a sink with its arrival time.

A chunk costs one read, one frame split and one call into the sink, with no await in between (why this client
exists: ``harness.load.http``). Responses are framed by ``Transfer-Encoding: chunked``, ``Content-Length`` or
connection close; reads are stamped by the kernel where it can (``harness.load.kernel_stamps``). A failure surfaces
as ``ConnectionBroken`` (saying whether the response had started) or ``ValueError`` (a malformed response), and a
connection whose state is in doubt is closed, never handed back to its pool (``ConnectionOwner``).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Protocol

from harness.load.kernel_stamps import ANCILLARY_SIZE, kernel_arrival
from harness.load.tls_layer import TlsLayer

EventSink = Callable[[bytes, float], bool]
"""Called with each SSE ``data:`` payload (UTF-8 bytes) and its arrival time (on the ``time.perf_counter()``
clock); True ends the stream."""

_READ_SIZE = 1 << 18


class Reply(tuple[int, bytes]):
    """``(status, body)`` of an answer, and the seconds its ``Retry-After`` asked for (None where it set none)."""

    retry_after: float | None

    def __new__(cls, status: int, body: bytes, retry_after: float | None = None) -> Reply:
        reply = super().__new__(cls, (status, body))
        reply.retry_after = retry_after
        return reply


def retry_after_seconds(value: str | bytes | None) -> float | None:
    """A ``Retry-After`` header's delay in seconds (its HTTP-date form, rare from inference servers, reads as 1 s)."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    try:
        return max(0.0, float(text.strip()))
    except ValueError:
        return 1.0


class ConnectionBroken(OSError):
    """The connection failed; ``responded`` says whether the response headers had arrived before it did."""

    def __init__(self, message: str, *, responded: bool) -> None:
        super().__init__(message)
        self.responded = responded


class Exchange:
    """The state of one response being read on a connection."""

    __slots__ = ("sink", "done", "status", "head", "chunked", "remaining", "body", "events", "finished",
                 "chunk_left", "keep_alive", "retry_after")

    def __init__(self, sink: EventSink, done: asyncio.Future[tuple[int, bytes]]) -> None:
        self.sink = sink
        self.done = done
        self.status = 0
        self.head = True
        self.chunked = False
        self.remaining = -1
        """Bytes of a Content-Length body still to come; -1 for chunked or read-until-close bodies."""
        self.body = b""
        """The body of a non-200 answer (returned to the caller for its error message)."""
        self.events = b""
        """Undelivered SSE text (an incomplete line)."""
        self.finished = False
        """The sink said the stream is over; the rest of the response is drained without delivery."""
        self.chunk_left = 0
        self.keep_alive = True
        self.retry_after: float | None = None


class ConnectionOwner(Protocol):
    """The pool a connection belongs to, told when the connection closes or is free for the next request."""

    def forget(self, conn: Connection) -> None: ...

    def release(self, conn: Connection) -> None: ...


class Connection:
    """One keep-alive connection: a non-blocking socket read by an event-loop reader callback, which parses the
    response as the bytes arrive.

    Measured and not kept: parsing a loop turn later so that every read of a burst is stamped first (no earlier
    stamps: the loop's own per-read cost dominates; kernel stamps are what removed the client from the stamp)."""

    def __init__(self, pool: ConnectionOwner, sock: socket.socket, loop: asyncio.AbstractEventLoop, *,
                 stamped: bool, tls: TlsLayer | None = None) -> None:
        self.pool = pool
        self.tls = tls
        """The connection's TLS session (``https://``); None in plain HTTP."""
        self.sock = sock
        self.loop = loop
        self.buffer = b""
        self.exchange: Exchange | None = None
        self.closed = False
        self.stamped = stamped
        self.sending: asyncio.Task[None] | None = None
        loop.add_reader(sock.fileno(), self._readable)

    def send(self, request: bytes, exchange: Exchange) -> None:
        assert self.exchange is None and not self.closed
        self.exchange = exchange
        if self.tls is not None:
            request = self.tls.seal(request)
        try:
            sent = self.sock.send(request)
        except OSError as exc:
            self.connection_lost(exc)
            return
        if sent < len(request):  # a full send buffer (a large prompt): finish it without blocking the loop
            self.sending = self.loop.create_task(self._send_rest(request[sent:]))  # held: tasks are weakly kept

    async def _send_rest(self, rest: bytes) -> None:
        try:
            await self.loop.sock_sendall(self.sock, rest)
        except OSError as exc:
            self.connection_lost(exc)

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.sock.fileno())
        self.sock.close()
        self.pool.forget(self)

    def _readable(self) -> None:
        try:
            if self.stamped:
                data, ancillary, _, _ = self.sock.recvmsg(_READ_SIZE, ANCILLARY_SIZE)
                at = kernel_arrival(ancillary, time.perf_counter())
            else:
                data, at = self.sock.recv(_READ_SIZE), time.perf_counter()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.connection_lost(exc)
            return
        if data and self.tls is not None:
            self._tls_received(data, at)
        elif data:
            self.data_received(data, at)
        else:
            self.connection_lost(None)

    def _tls_received(self, raw: bytes, at: float) -> None:
        """Decrypt what arrived (stamped when its ciphertext arrived); answer what TLS asks; a close is a close."""
        assert self.tls is not None
        try:
            plain, reply, closed = self.tls.open(raw)
            if reply:
                self.sock.sendall(reply)  # a few bytes (a key update): never more than the send buffer holds
        except OSError as exc:  # ssl.SSLError included: a corrupt record, the peer's alert
            self.connection_lost(exc)
            return
        if plain:
            self.data_received(plain, at)
        if closed and not self.closed:
            self.connection_lost(None)

    def connection_lost(self, exc: Exception | None) -> None:
        exchange = self.exchange
        self.abort()
        if exchange is None:
            return
        if exchange.status == 200 and exchange.remaining < 0 and not exchange.chunked and not exchange.head:
            self._finish(exchange)  # a read-until-close body ends here
        elif not exchange.done.done():
            why = f": {exc}" if exc else ""
            exchange.done.set_exception(ConnectionBroken(f"connection closed{why}", responded=not exchange.head))

    def data_received(self, data: bytes, at: float) -> None:
        exchange = self.exchange
        if exchange is None:  # bytes nobody asked for: the connection is not safe to reuse
            self.abort()
            return
        try:
            self.buffer += data
            if exchange.head and not self._read_head(exchange):
                return
            if exchange.chunked:
                self._read_chunks(exchange, at)
            else:
                body, self.buffer = self.buffer, b""
                if exchange.remaining >= 0:
                    body, extra = body[:exchange.remaining], body[exchange.remaining:]
                    exchange.remaining -= len(body)
                    if extra:
                        raise ValueError("bytes after the end of the response")
                self._deliver(exchange, body, at)
                if exchange.remaining == 0:
                    self._finish(exchange)
        except ValueError as exc:  # a malformed response or event: the request fails, the connection goes
            if not exchange.done.done():
                exchange.done.set_exception(exc)
            self.exchange = None
            self.abort()

    def _read_head(self, exchange: Exchange) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = self.buffer[:end].split(b"\r\n")
        self.buffer = self.buffer[end + 4:]
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP/1.x response: {lines[0][:80]!r}")
        exchange.status = int(parts[1])
        exchange.head = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"transfer-encoding" and b"chunked" in value:
                exchange.chunked = True
            elif name == b"content-length":
                exchange.remaining = int(value)
            elif name == b"connection" and value == b"close":
                exchange.keep_alive = False
            elif name == b"retry-after":
                exchange.retry_after = retry_after_seconds(value)
        if exchange.chunked:
            exchange.remaining = -1
        elif exchange.remaining < 0:
            exchange.keep_alive = False  # the body ends when the connection does
        return True

    def _read_chunks(self, exchange: Exchange, at: float) -> None:
        """Strip chunked framing; ``chunk_left``: >0 data bytes to come, -1 the CRLF after data, 0 a size line,
        -2 the trailer section after the last chunk."""
        buffer, pos, size_of = self.buffer, 0, len(self.buffer)
        pieces: list[bytes] = []
        while pos < size_of:
            left = exchange.chunk_left
            if left > 0:
                end = min(size_of, pos + left)
                pieces.append(buffer[pos:end])
                exchange.chunk_left = left - (end - pos) or -1
                pos = end
            elif left == -1:
                if size_of - pos < 2:
                    break
                pos, exchange.chunk_left = pos + 2, 0
            else:
                line_end = buffer.find(b"\r\n", pos)
                if line_end < 0:
                    break
                line, pos = buffer[pos:line_end], line_end + 2
                if left == 0:
                    size = int(line.split(b";", 1)[0], 16)
                    if size == 0:
                        exchange.chunk_left = -2
                    elif pos + size + 2 <= size_of:  # the common case: the whole chunk is here
                        pieces.append(buffer[pos:pos + size])
                        pos += size + 2
                    else:
                        exchange.chunk_left = size
                elif not line:  # the empty line that ends the trailers: the response is complete
                    self.buffer = b""
                    self._deliver(exchange, b"".join(pieces), at)
                    self._finish(exchange)
                    return
        self.buffer = buffer[pos:]
        self._deliver(exchange, b"".join(pieces), at)

    def _deliver(self, exchange: Exchange, data: bytes, at: float) -> None:
        if not data:
            return
        if exchange.status != 200:
            exchange.body += data
            return
        if exchange.finished:
            return
        *lines, exchange.events = (exchange.events + data if exchange.events else data).split(b"\n")
        sink = exchange.sink
        for line in lines:
            if line.startswith(b"data:") and sink(line[5:].strip(), at):
                exchange.finished = True
                exchange.events = b""
                if not exchange.done.done():
                    exchange.done.set_result((200, b""))
                return

    def _finish(self, exchange: Exchange) -> None:
        """The whole response has been read: answer the caller and offer the connection for reuse."""
        if exchange.status == 200 and exchange.events and not exchange.finished:
            self._deliver(exchange, b"\n", time.perf_counter())  # a last event without a trailing newline
        if not exchange.done.done():
            exchange.done.set_result(Reply(exchange.status, exchange.body, exchange.retry_after))
        self.exchange = None
        if exchange.keep_alive and not self.closed:
            self.pool.release(self)
        else:
            self.abort()
