"""HTTP/1.1 responses as bytes on the wire, for the lean client's tests: SSE events, chunked framing, a sink that
keeps what it was handed, and a server that answers every request with the same bytes (plain or over TLS)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

EVENTS = ['{"a": 1}', '{"b": "x\u2028y"}', "[DONE]"]
"""Three events, one with a character that is a line break to some decoders but not to SSE."""
STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def sse(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


def chunked(body: bytes, size: int) -> bytes:
    """``body`` in chunks of ``size`` bytes, then the terminating chunk."""
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


class Sink:
    """Keeps every event's payload; ``[DONE]`` ends the stream."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.times: list[float] = []

    def __call__(self, data: bytes, at: float) -> bool:
        self.events.append(data.decode())
        self.times.append(at)
        return data == b"[DONE]"


@asynccontextmanager
async def canned(response: bytes, context: ssl.SSLContext | None = None) -> AsyncIterator[tuple[str, list[int]]]:
    """A server answering every request on a connection with ``response`` (over TLS with a server ``context``, as
    ``https://localhost``); the list counts its connections."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), 0)
                await reader.readexactly(length)
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield (f"https://localhost:{port}" if context else f"http://127.0.0.1:{port}"), connections
    finally:
        server.close()
