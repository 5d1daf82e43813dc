"""A loopback OpenAI-compatible streaming server that costs next to nothing: the instrument that measures the client.

It exists to answer two questions the fake server (``harness_testing.fake_engine``, a Starlette app) cannot: how many
streamed tokens per second our client sustains when the server is never the bottleneck, and what the client does
when a connection misbehaves at the socket level (reset mid-stream, a stream cut without ``[DONE]``, a hang, an
HTTP error). It is a raw ``asyncio.Protocol`` speaking just enough HTTP/1.1 (keep-alive, chunked SSE responses),
with every chunk's bytes rendered from one template, so one process serves several hundred thousand chunks a second.

It measures nothing and serves no model: prompts are ignored, ``max_tokens`` words are streamed with vLLM's usage
chunks (``continuous_usage_stats`` honoured), each chunk as its own socket write.

    python -m harness_testing.loopback --port 8123 [--ttft-ms 0 --itl-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

Fault = Literal["http_500", "http_429", "reset_mid_stream", "cut_stream", "hang", "close_before_response"]
"""What the server does to a faulty request: answer an error status, reset the connection after a few chunks,
end the stream cleanly but without ``[DONE]``, never answer, or close the socket without a response."""

_CHUNKS_BEFORE_FAULT = 3


@dataclass(frozen=True, slots=True)
class LoopbackConfig:
    ttft_ms: float = 0.0
    """Delay before the first chunk; 0 streams at once."""
    itl_ms: float = 0.0
    """Delay between chunks, on absolute deadlines (no drift); 0 streams as fast as the socket takes it."""
    fault: Fault | None = None
    fault_every: int = 1
    """Every n-th generation request (1st, n+1-th, ...) gets ``fault``; 1 faults every request."""
    model: str = "loopback"
    stamp: bool = False
    """Put the send time (``time.perf_counter()``, CLOCK_MONOTONIC: comparable across processes on Linux) in
    every token chunk as ``"sent_at"``, so a benchmark can measure how late the client stamps its arrival."""


class _Http(asyncio.Protocol):
    """One client connection: parses requests, answers them one after another (HTTP/1.1 keep-alive)."""

    def __init__(self, server: LoopbackServer) -> None:
        self.server = server
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.requests: asyncio.Queue[tuple[bytes, bytes, bytes]] = asyncio.Queue()
        self.worker: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio subclasses
        self.worker = asyncio.get_running_loop().create_task(self._serve())
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.writable.set()
        if self.worker is not None:
            self.worker.cancel()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < head_end + 4 + length:
                return
            method, path, _ = head.split(b"\r\n", 1)[0].split(b" ", 2)
            body = self.buffer[head_end + 4: head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length:]
            self.requests.put_nowait((method, path, body))

    async def _serve(self) -> None:
        while True:
            method, path, body = await self.requests.get()
            if not await self.server.answer(self, method, path, body):
                return

    async def write(self, data: bytes) -> bool:
        """Write one piece; False when the connection is gone. Waits while the client's buffer is full."""
        if self.transport is None or self.transport.is_closing():
            return False
        self.transport.write(data)
        if not self.writable.is_set():
            await self.writable.wait()
        return not self.transport.is_closing()


def _response(status: int, body: bytes, content_type: bytes = b"application/json") -> bytes:
    reason = {200: b"OK", 404: b"Not Found", 429: b"Too Many Requests", 500: b"Internal Server Error"}[status]
    return (b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n"
            % (status, reason, content_type, len(body)) + body)


def _chunk(payload: bytes) -> bytes:
    """One HTTP chunk holding one SSE event."""
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


_STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                b"cache-control: no-cache\r\n\r\n")
_DONE = _chunk(b"[DONE]") + b"0\r\n\r\n"


class LoopbackServer:
    """The server's state; run it in this loop with ``serve`` or as a process with ``python -m``."""

    def __init__(self, config: LoopbackConfig = LoopbackConfig()) -> None:
        self.config = config
        self.generation_requests = 0
        self.connections: set[_Http] = set()
        self._chunks: dict[tuple[int, bool, bool, bool], tuple[bytes, ...]] = {}
        self._streams: list[list[Any]] = []
        self._pump: asyncio.Task[None] | None = None

    async def answer(self, conn: _Http, method: bytes, path: bytes, body: bytes) -> bool:
        """Answer one request; False closes the connection."""
        if path in (b"/v1/completions", b"/v1/chat/completions") and method == b"POST":
            return await self._generate(conn, body, chat=path.endswith(b"chat/completions"))
        if path == b"/health":
            return await conn.write(_response(200, b""))
        if path == b"/v1/models":
            card = {"object": "list", "data": [{"id": self.config.model, "object": "model"}]}
            return await conn.write(_response(200, json.dumps(card).encode()))
        return await conn.write(_response(404, b'{"error": {"message": "not found", "code": 404}}'))

    async def _generate(self, conn: _Http, body: bytes, *, chat: bool) -> bool:
        config = self.config
        self.generation_requests += 1
        faulty = config.fault is not None and (self.generation_requests - 1) % config.fault_every == 0
        fault = config.fault if faulty else None
        if fault == "close_before_response":
            assert conn.transport is not None
            conn.transport.close()
            return False
        if fault == "hang":
            await asyncio.Event().wait()
        if fault in ("http_500", "http_429"):
            status = int(fault.removeprefix("http_"))
            error = {"error": {"message": f"injected {status}", "type": "InjectedError", "code": status}}
            return await conn.write(_response(status, json.dumps(error).encode()))
        request = json.loads(body)
        max_tokens = int(request.get("max_completion_tokens") or request.get("max_tokens") or 16)
        options = request.get("stream_options") or {}
        chunks = self._rendered(max_tokens, chat, bool(options.get("continuous_usage_stats")),
                                bool(options.get("include_usage")))
        if not await conn.write(_STREAM_HEAD):
            return False
        if config.ttft_ms == 0 and config.itl_ms == 0 and not config.stamp and fault is None:
            return await self._pumped(conn, chunks)
        start = time.monotonic()
        for n, chunk in enumerate(chunks[:max_tokens], 1):
            due = start + (config.ttft_ms + (n - 1) * config.itl_ms) / 1000.0
            delay = due - time.monotonic()
            await asyncio.sleep(delay if delay > 0 else 0)  # sleep(0) still yields: one chunk per socket write
            if config.stamp:  # the send time, taken as late as possible
                chunk = _chunk(chunk[chunk.index(b"{"):chunk.rindex(b"}")] + b',"sent_at":%.9f}' % time.perf_counter())
            if not await conn.write(chunk):
                return False
            if fault is not None and n == _CHUNKS_BEFORE_FAULT:
                assert conn.transport is not None
                if fault == "reset_mid_stream":
                    conn.transport.abort()
                    return False
                if fault == "cut_stream":
                    await conn.write(b"0\r\n\r\n")
                    return True
        for chunk in chunks[max_tokens:]:  # the usage chunk and [DONE]
            if not await conn.write(chunk):
                return False
        return True

    def _rendered(self, max_tokens: int, chat: bool, continuous: bool, include_usage: bool) -> tuple[bytes, ...]:
        """Every chunk of one answer, token chunks first, then the usage chunk and [DONE] (cached: rendering
        per chunk would make the server, not the client, the bottleneck)."""
        key = (max_tokens, chat, continuous, include_usage)
        if key not in self._chunks:
            if chat:
                template = ('{"id":"chatcmpl-lb","object":"chat.completion.chunk","model":"%s","choices":[{"index":0,'
                            '"delta":{"content":" tok"},"finish_reason":%s}]%s}')
            else:
                template = ('{"id":"cmpl-lb","object":"text_completion","model":"%s","choices":[{"index":0,'
                            '"text":" tok","finish_reason":%s}]%s}')
            usage = ',"usage":{"prompt_tokens":8,"completion_tokens":%d,"total_tokens":%d}'
            model = self.config.model
            chunks = [_chunk((template % (model, '"length"' if n == max_tokens else "null",
                                          usage % (n, n + 8) if continuous else "")).encode())
                      for n in range(1, max_tokens + 1)]
            if include_usage:
                tail = ('{"id":"cmpl-lb","object":"text_completion","model":"' + model + '","choices":[],"usage":'
                        f'{{"prompt_tokens":8,"completion_tokens":{max_tokens},"total_tokens":{max_tokens + 8}}}}}')
                chunks.append(_chunk(tail.encode()))
            chunks.append(_DONE)
            self._chunks[key] = tuple(chunks)
        return self._chunks[key]

    async def _pumped(self, conn: _Http, chunks: tuple[bytes, ...]) -> bool:
        """Stream as fast as possible: one pump writes the next chunk of every active stream per loop turn, so a
        chunk costs one socket write and no coroutine switch, and streams still interleave chunk by chunk."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._streams.append([conn, chunks, 0, done])
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._pump_streams())
        return await done

    async def _pump_streams(self) -> None:
        streams = self._streams
        while streams:
            for stream in list(streams):
                conn, chunks, sent, done = stream
                transport = conn.transport
                if transport is None or transport.is_closing():
                    streams.remove(stream)
                    done.set_result(False)
                elif conn.writable.is_set():  # a client that cannot keep up is skipped, not buffered for
                    transport.write(chunks[sent])
                    stream[2] = sent + 1
                    if sent + 1 == len(chunks):
                        streams.remove(stream)
                        done.set_result(True)
            await asyncio.sleep(0)

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve in the running loop; yields the base URL. Open connections are dropped on exit."""
        server = await asyncio.get_running_loop().create_server(lambda: _Http(self), host, port, backlog=4096)
        try:
            sock = server.sockets[0].getsockname()
            yield f"http://{sock[0]}:{sock[1]}"
        finally:
            server.close()
            for conn in list(self.connections):
                if conn.transport is not None:
                    conn.transport.abort()
            await server.wait_closed()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness_testing.loopback", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--itl-ms", type=float, default=0.0)
    parser.add_argument("--stamp", action="store_true", help="put each chunk's send time in it as sent_at")
    parser.add_argument("--uvloop", action="store_true", help="serve on uvloop (when installed)")
    args = parser.parse_args(argv)
    server = LoopbackServer(LoopbackConfig(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, stamp=args.stamp))

    async def forever() -> None:
        async with server.serve(args.host, args.port):
            await asyncio.Event().wait()

    if args.uvloop:
        import uvloop

        uvloop.run(forever())
    else:
        asyncio.run(forever())


if __name__ == "__main__":
    main()
