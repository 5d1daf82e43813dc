"""A lean HTTP/1.1 client for one job: POST a JSON body and hand each server-sent event to a sink as it arrives.

Why not httpx or aiohttp: a load generator must never be the bottleneck it measures, and a general HTTP client
costs several coroutine switches per streamed chunk. Here the response is parsed in the event loop's reader
callback, so a chunk costs one read, one frame split and one call into the sink, with no await in between.

Arrival times come from the kernel, not from the client (``harness.load.kernel_stamps``), so a busy client reads late
but still stamps each chunk when it arrived. Measured against ``vllm bench serve``'s aiohttp client in
``tools/client_bench`` (``make client-bench``).

Scope, on purpose: ``http://`` and ``https://`` (TLS in memory over the same raw socket: ``tls_layer``), keep-alive
connections reused per request, responses framed by ``Transfer-Encoding: chunked``, ``Content-Length`` or
connection close. Failures surface as ``ConnectionBroken``
(saying whether the response had started); timeouts are the caller's (``asyncio.timeout`` around the call),
and a request abandoned mid-response drops its connection rather than returning it dirty to the pool. This module
is the pool and the request; one connection and the parsing of its response are ``harness.load.http_connection``.
"""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

from harness.endpoint_access import headers_for, verify_for
from harness.load.http_connection import Connection, ConnectionBroken, EventSink, Exchange
from harness.load.kernel_stamps import enable_kernel_stamps
from harness.load.tls_layer import TlsLayer, client_context


class ConnectionPool:
    """Keep-alive connections to one ``http(s)://host:port``; a connection serves one request at a time."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or parts.hostname is None:
            raise ValueError(f"the streaming client speaks http:// and https:// only, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        # https: the certificate checked as the origin was granted (harness.endpoint_access)
        self.tls_context = client_context(verify_for(base_url)) if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        # the origin's granted headers (a deployment's API key): written into every request head, logged nowhere
        self._granted = "".join(f"{name}: {value}\r\n" for name, value in headers_for(base_url).items())
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()

    def forget(self, conn: Connection) -> None:
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    def release(self, conn: Connection) -> None:
        self._idle.append(conn)

    async def _acquire(self) -> Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stamped = enable_kernel_stamps(sock)
            address = (await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM,
                                              family=sock.family))[0][4]
            await loop.sock_connect(sock, address)
        except (OSError, IndexError) as exc:
            sock.close()
            raise ConnectionBroken(f"cannot connect to {self.host}:{self.port}: {exc}", responded=False) from exc
        tls = None
        if self.tls_context is not None:
            tls = TlsLayer(self.tls_context, self.host)
            try:
                await tls.handshake(loop, sock)
            except OSError as exc:  # ssl.SSLError included: a certificate this origin's grant does not trust
                sock.close()
                raise ConnectionBroken(f"TLS with {self.host}:{self.port} failed: {exc}", responded=False) from exc
        conn = Connection(self, sock, loop, stamped=stamped, tls=tls)
        self._all.add(conn)
        return conn

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        """POST ``body`` (JSON) and feed each SSE event of a 200 answer to ``sink``.

        Returns ``(200, b"")`` once the sink ends the stream or the response ends, or ``(status, body)`` for any
        other status. Raises ``ConnectionBroken`` or ``ValueError`` (a malformed response, or the sink's own).
        """
        conn = await self._acquire()
        done: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        exchange = Exchange(sink, done)
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nAccept: text/event-stream\r\n{self._granted}"
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
