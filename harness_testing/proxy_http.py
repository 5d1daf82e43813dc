"""The HTTP/1.1 the endpoint proxy (``harness_testing.endpoint_proxy``) speaks to its clients: reading one request off
a keep-alive connection, and writing response heads, chunks and complete JSON error answers.

Just what the harness's clients send, on purpose: ``Content-Length`` bodies (a chunked request body is refused with
501), no ``Expect: 100-continue``, no pipelining. What the proxy does with a request is not here.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus

HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
                        b"trailer", b"transfer-encoding", b"upgrade"})
"""Headers that describe one connection, not the message: never passed on (RFC 9110, 7.6.1)."""
LAST_CHUNK = b"0\r\n\r\n"


class BadRequest(Exception):
    """A request the proxy cannot read; answered with ``status`` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    """One request as read: the target is the origin form (path and query); header names keep their case."""

    method: str
    target: str
    headers: list[tuple[bytes, bytes]]
    body: bytes
    keep_alive: bool
    at: float
    """``time.monotonic()`` when its head was read."""

    def header(self, name: bytes) -> str | None:
        """The first value of the header ``name`` (lower case), or None."""
        values = [value for key, value in self.headers if key.lower() == name]
        return values[0].decode("latin-1") if values else None


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on a connection; None when the client closed it (between requests or mid-body)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise BadRequest(400, "request head cut short") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest(431, "request head too large") from None
    at = time.monotonic()
    request_line, *lines = head[:-4].split(b"\r\n")
    parts = request_line.decode("latin-1").split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[1].startswith("/"):
        raise BadRequest(400, "malformed request line")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name.strip():
            raise BadRequest(400, "malformed header line")
        headers.append((name.strip(), value.strip()))
    request = Request(parts[0], parts[1], headers, b"", keep_alive=True, at=at)
    if "chunked" in (request.header(b"transfer-encoding") or "").lower():
        raise BadRequest(501, "chunked request bodies are not supported")
    length = request.header(b"content-length") or "0"
    if not length.isdigit():
        raise BadRequest(400, "malformed Content-Length")
    try:
        body = await reader.readexactly(int(length))
    except asyncio.IncompleteReadError:
        return None
    connection = (request.header(b"connection") or "").lower()
    keep_alive = "keep-alive" in connection if parts[2] == "HTTP/1.0" else "close" not in connection
    return Request(parts[0], parts[1], headers, body, keep_alive, at)


def response_head(status: int, headers: Iterable[tuple[bytes, bytes]], *, keep_alive: bool) -> bytes:
    """A status line and headers, with ``connection: close`` when the connection ends after this answer."""
    try:
        reason = HTTPStatus(status).phrase.encode()
    except ValueError:
        reason = b"Unknown"
    lines = [b"HTTP/1.1 %d %s" % (status, reason), *(name + b": " + value for name, value in headers)]
    if not keep_alive:
        lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def error_response(status: int, message: str, error_type: str, *, keep_alive: bool,
                   extra: Iterable[tuple[bytes, bytes]] = ()) -> bytes:
    """A complete response with an OpenAI-style JSON error body: ``{"error": {"message", "type", "code"}}``."""
    body = json.dumps({"error": {"message": message, "type": error_type, "code": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)), *extra]
    return response_head(status, headers, keep_alive=keep_alive) + body


def chunk(data: bytes) -> bytes:
    """One chunk of a ``Transfer-Encoding: chunked`` body; ``data`` must not be empty (that is the last chunk)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


async def send(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write and wait until the client has taken it (a slow client slows the relay instead of filling memory)."""
    writer.write(data)
    await writer.drain()


def abort_with_reset(writer: asyncio.StreamWriter) -> None:
    """Drop the connection with a TCP RST (SO_LINGER 0), as a crashed server or a cut network does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
