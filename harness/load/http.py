"""A lean HTTP/1.1 client for one job: POST a JSON body and hand each server-sent event to a sink as it arrives.

Why not httpx or aiohttp: a load generator must never be the bottleneck it measures, and a general HTTP client
costs several coroutine switches per streamed chunk. Here the response is parsed in the event loop's reader
callback, so a chunk costs one read, one frame split and one call into the sink, with no await in between.

Arrival times come from the kernel, not from the client: each socket asks for ``SO_TIMESTAMPNS``, so every read
carries the time its last packet reached the socket (events that share a read share that stamp). A busy client
(64 streams whose chunks land in the same millisecond, a garbage collection, a loaded machine) then reads late but
still stamps each chunk when it arrived, which is what TTFT and ITL mean. Where the kernel gives no timestamp the
read is stamped on receipt.
Measured against ``vllm bench serve``'s aiohttp client in ``benchmarks/client_bench.py``.

Scope, on purpose: plain ``http://``, keep-alive connections reused per request, responses framed by
``Transfer-Encoding: chunked``, ``Content-Length`` or connection close. Failures surface as ``ConnectionBroken``
(saying whether the response had started); timeouts are the caller's (``asyncio.timeout`` around the call),
and a request abandoned mid-response drops its connection rather than returning it dirty to the pool.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit

EventSink = Callable[[bytes, float], bool]
"""Called with each SSE ``data:`` payload (UTF-8 bytes) and its arrival time (on the ``time.perf_counter()``
clock); True ends the stream."""

# Python's socket module does not export it; 35 is SO_TIMESTAMPNS (and SCM_TIMESTAMPNS) in Linux's generic and
# x86 headers. Elsewhere, or where setsockopt refuses it, reads are stamped on receipt.
_SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform == "linux" else None)
_SCM_TIMESTAMPNS: int | None = getattr(socket, "SCM_TIMESTAMPNS", _SO_TIMESTAMPNS)
_TIMESPEC = struct.Struct("@qq")
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)
_READ_SIZE = 1 << 18


def kernel_arrival(ancillary: list[tuple[int, int, bytes]], now: float) -> float:
    """The arrival time a read's ``SCM_TIMESTAMPNS`` gives, on the perf_counter clock; ``now`` when absent.

    The kernel stamps on CLOCK_REALTIME; it is moved onto perf_counter's clock with the offset between the two
    taken at this read, so a clock step between reads cannot bend an interval. A stamp from the future (not
    possible unless the offset is off) is clamped to ``now``."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SCM_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds: int
            nanos: int
            seconds, nanos = _TIMESPEC.unpack_from(data)
            return min(now, seconds + nanos * 1e-9 - (time.time() - now))
    return now


class ConnectionBroken(OSError):
    """The connection failed; ``responded`` says whether the response headers had arrived before it did."""

    def __init__(self, message: str, *, responded: bool) -> None:
        super().__init__(message)
        self.responded = responded


class _Exchange:
    """The state of one response being read on a connection."""

    __slots__ = ("sink", "done", "status", "head", "chunked", "remaining", "body", "events", "finished",
                 "chunk_left", "keep_alive")

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


class _Connection:
    """One keep-alive connection: a non-blocking socket read by an event-loop reader callback, which parses the
    response as the bytes arrive.

    Measured and not kept: parsing a loop turn later so that every read of a burst is stamped first (no earlier
    stamps: the loop's own per-read cost dominates; kernel stamps are what removed the client from the stamp)."""

    def __init__(self, pool: ConnectionPool, sock: socket.socket, loop: asyncio.AbstractEventLoop, *,
                 stamped: bool) -> None:
        self.pool = pool
        self.sock = sock
        self.loop = loop
        self.buffer = b""
        self.exchange: _Exchange | None = None
        self.closed = False
        self.stamped = stamped
        self.sending: asyncio.Task[None] | None = None
        loop.add_reader(sock.fileno(), self._readable)

    def send(self, request: bytes, exchange: _Exchange) -> None:
        assert self.exchange is None and not self.closed
        self.exchange = exchange
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
                data, ancillary, _, _ = self.sock.recvmsg(_READ_SIZE, _ANCILLARY)
                at = kernel_arrival(ancillary, time.perf_counter())
            else:
                data, at = self.sock.recv(_READ_SIZE), time.perf_counter()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.connection_lost(exc)
            return
        if data:
            self.data_received(data, at)
        else:
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

    def _read_head(self, exchange: _Exchange) -> bool:
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
        if exchange.chunked:
            exchange.remaining = -1
        elif exchange.remaining < 0:
            exchange.keep_alive = False  # the body ends when the connection does
        return True

    def _read_chunks(self, exchange: _Exchange, at: float) -> None:
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

    def _deliver(self, exchange: _Exchange, data: bytes, at: float) -> None:
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

    def _finish(self, exchange: _Exchange) -> None:
        """The whole response has been read: answer the caller and offer the connection for reuse."""
        if exchange.status == 200 and exchange.events and not exchange.finished:
            self._deliver(exchange, b"\n", time.perf_counter())  # a last event without a trailing newline
        if not exchange.done.done():
            exchange.done.set_result((exchange.status, exchange.body))
        self.exchange = None
        if exchange.keep_alive and not self.closed:
            self.pool.release(self)
        else:
            self.abort()


class ConnectionPool:
    """Keep-alive connections to one ``http://host:port``; a connection serves one request at a time."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"the streaming client speaks plain http://host:port only, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()

    def forget(self, conn: _Connection) -> None:
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    def release(self, conn: _Connection) -> None:
        self._idle.append(conn)

    async def _acquire(self) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stamped = _SO_TIMESTAMPNS is not None
            if _SO_TIMESTAMPNS is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                except OSError:
                    stamped = False
            address = (await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM,
                                              family=sock.family))[0][4]
            await loop.sock_connect(sock, address)
        except (OSError, IndexError) as exc:
            sock.close()
            raise ConnectionBroken(f"cannot connect to {self.host}:{self.port}: {exc}", responded=False) from exc
        conn = _Connection(self, sock, loop, stamped=stamped)
        self._all.add(conn)
        return conn

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        """POST ``body`` (JSON) and feed each SSE event of a 200 answer to ``sink``.

        Returns ``(200, b"")`` once the sink ends the stream or the response ends, or ``(status, body)`` for any
        other status. Raises ``ConnectionBroken`` or ``ValueError`` (a malformed response, or the sink's own).
        """
        conn = await self._acquire()
        done: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        exchange = _Exchange(sink, done)
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        conn.send(head + body, exchange)
        try:
            return await done
        except BaseException:
            # Cancelled (timeout) or failed mid-response: the connection's state is unknown, never reuse it.
            conn.exchange = None
            conn.abort()
            raise

    async def __aenter__(self) -> ConnectionPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for conn in list(self._all):
            conn.abort()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let callbacks queued by the closes run
