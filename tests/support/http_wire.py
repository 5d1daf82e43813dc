"""HTTP/1.1 responses as bytes on the wire, for the lean client's tests: SSE events, chunked framing, and a sink that
keeps what it was handed."""

from __future__ import annotations

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
