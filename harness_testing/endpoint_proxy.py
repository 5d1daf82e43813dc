"""A reverse proxy before a real OpenAI-compatible server: how tests make a "deployment" the harness did not launch.

Integration tests put it before a real engine to add what a deployment has and a local launch lacks: TLS, an API key
(required on every request but ``GET /metrics``, ``/health`` and ``/version``, which vLLM's own ``--api-key`` leaves
open too), and injected faults (``harness_testing.proxy_faults``: error statuses, 429 with ``Retry-After``, a reset
mid-stream, a stall), applied to inference POSTs by their index. It records every request it saw
(``EndpointProxy.seen``), so a test can prove the harness sent its key only where it should.

It speaks just enough HTTP/1.1 for the harness's clients (``harness_testing.proxy_http``): keep-alive,
``Content-Length`` request bodies, responses relayed with ``Transfer-Encoding: chunked``, each upstream chunk flushed
as it arrives (SSE latency is what the harness measures). It listens on 127.0.0.1 only, runs in the caller's loop
(``async with``) or in a thread of its own (``proxy_in_thread``), or as a process until SIGTERM; the key comes from
an environment variable, never from argv::

    python -m harness_testing.endpoint_proxy --upstream http://127.0.0.1:8000 [--port N] [--cert PEM --key PEM]
        [--api-key-env VAR] [--faults "0-2=status:429:1,5=reset,*=pass"]

It imports nothing of ``harness``: it is a stand-in for the outside world.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import signal
import ssl
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from harness_testing.proxy_faults import FaultAction, FaultPlan
from harness_testing.proxy_http import (
    HOP_BY_HOP,
    LAST_CHUNK,
    BadRequest,
    Request,
    abort_with_reset,
    chunk,
    error_response,
    read_request,
    response_head,
    send,
)

_OPEN_PATHS = frozenset({"/metrics", "/health", "/version"})
_NOT_FORWARDED = HOP_BY_HOP | {b"authorization", b"host", b"content-length"}  # the key is the proxy's to consume
_NOT_RELAYED = HOP_BY_HOP | {b"content-length"}  # the body is re-framed as chunks
_EVENTS_BEFORE_RESET = 2
_NO_FAULTS = FaultPlan()
_HEAD_LIMIT = 1 << 20
_CLOSE_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class SeenRequest:
    """One request as the proxy received it."""

    method: str
    path: str
    """Without the query string."""
    authorized: bool | None
    """Whether it carried the proxy's key (on an open path too); None when the proxy has no key."""
    had_auth_header: bool
    at: float
    """``time.monotonic()`` when its head was read."""
    fault: str = ""
    """The fault action applied (``pass``, ``status:429:1``, ``reset``, ``stall``); "" where none applies: not an
    inference POST, or refused for its key (a refused request takes no fault index)."""
    authorization: str | None = field(default=None, repr=False)
    """The Authorization header as received; out of the repr, so that a failing assertion prints no key."""


class EndpointProxy:
    """The proxy, served in the running loop between ``async with`` and its exit; ``url`` is set on entry."""

    def __init__(self, upstream: str, *, ssl_context: ssl.SSLContext | None = None, api_key: str | None = None,
                 faults: FaultPlan = _NO_FAULTS, port: int = 0) -> None:
        if urlsplit(upstream).scheme not in ("http", "https"):
            raise ValueError(f"the upstream must be an http:// or https:// URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.faults = faults
        self.url = ""
        self.seen: list[SeenRequest] = []
        """Every request received, in order, refused ones too."""
        self.accepted = 0
        """Client connections accepted: fewer than requests when the client keeps its connections alive."""
        self._ssl_context = ssl_context
        self._api_key = api_key
        self._port = port
        self._inference_posts = 0
        self._server: asyncio.Server | None = None
        self._client: httpx.AsyncClient | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> EndpointProxy:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", self._port,
                                                  ssl=self._ssl_context, limit=_HEAD_LIMIT)
        # made here, not in __init__: it belongs to the loop that serves (proxy_in_thread's, not its caller's)
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10.0), trust_env=False,
                                         limits=httpx.Limits(max_connections=None))
        port = self._server.sockets[0].getsockname()[1]
        # "localhost", not the address: a test certificate is issued for the name
        self.url = f"https://localhost:{port}" if self._ssl_context is not None else f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop listening, cut every connection (stalled ones too) and close the upstream client."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await asyncio.sleep(0)  # a connection accepted just now starts, sees the proxy closed and ends
            for task in self._connections:
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await server.wait_closed()
        if self._client is not None:
            await self._client.aclose()

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._server is None or task is None:
            writer.transport.abort()
            return
        self.accepted += 1
        self._connections.add(task)
        try:
            while await self._answer_next(reader, writer):
                pass
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), _CLOSE_TIMEOUT_S)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away, or never finished its TLS goodbye
        except asyncio.CancelledError:
            pass  # the proxy is stopping; ended, not cancelled: Python 3.11's asyncio.streams logs a cancelled handler
        finally:
            writer.transport.abort()  # a no-op once closed; otherwise the proxy is stopping or the connection broke
            self._connections.discard(task)

    async def _answer_next(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read and answer one request; False ends the connection."""
        try:
            request = await read_request(reader)
        except BadRequest as error:
            await send(writer, error_response(error.status, str(error), "invalid_request_error", keep_alive=False))
            return False
        if request is None:
            return False
        authorization = request.header(b"authorization")
        authorized = None if self._api_key is None else _carries_key(authorization, self._api_key)
        path = urlsplit(request.target).path
        refused = authorized is False and not (request.method == "GET" and path in _OPEN_PATHS)
        action: FaultAction | None = None
        if request.method == "POST" and path.endswith("/completions") and not refused:
            action = self.faults.action_for(self._inference_posts)
            self._inference_posts += 1
        self.seen.append(SeenRequest(request.method, path, authorized, authorization is not None, request.at,
                                     "" if action is None else str(action), authorization))
        if refused:
            message = "missing or invalid API key: send Authorization: Bearer <key>"
            await send(writer, error_response(401, message, "invalid_request_error", keep_alive=request.keep_alive,
                                              extra=[(b"www-authenticate", b"Bearer")]))
            return request.keep_alive
        if action is None or action.kind in ("pass", "reset"):
            return await self._forward(request, writer, reset=action is not None and action.kind == "reset")
        if action.kind == "status":
            assert action.status is not None
            extra = [] if action.retry_after_s is None else [(b"retry-after", b"%d" % action.retry_after_s)]
            await send(writer, error_response(action.status, f"injected fault: {action}", "injected_fault",
                                              keep_alive=request.keep_alive, extra=extra))
            return request.keep_alive
        while await reader.read(1 << 16):  # stall: answer nothing until the client gives up (or the proxy stops)
            pass
        return False

    async def _forward(self, request: Request, writer: asyncio.StreamWriter, *, reset: bool) -> bool:
        """Relay one request and its streamed answer; with ``reset``, abort the connection after a few events."""
        client = self._client
        assert client is not None  # set on entry, before the first connection
        headers = [(name, value) for name, value in request.headers if name.lower() not in _NOT_FORWARDED]
        outbound = client.build_request(request.method, self.upstream + request.target, headers=headers,
                                        content=request.body)
        try:
            response = await client.send(outbound, stream=True)
        except httpx.HTTPError as error:
            message = f"upstream {self.upstream} failed: {type(error).__name__}"
            await send(writer, error_response(502, message, "upstream_error", keep_alive=request.keep_alive))
            return request.keep_alive
        try:
            bodyless = request.method == "HEAD" or response.status_code in (204, 304)
            dropped = HOP_BY_HOP if bodyless else _NOT_RELAYED
            relayed = [(name, value) for name, value in response.headers.raw if name.lower() not in dropped]
            framing = [] if bodyless else [(b"transfer-encoding", b"chunked")]
            await send(writer, response_head(response.status_code, relayed + framing, keep_alive=request.keep_alive))
            if bodyless:
                return request.keep_alive
            sent = b""
            async for data in response.aiter_raw():
                end = _end_of_events(sent + data, _EVENTS_BEFORE_RESET) if reset else None
                if end is not None:
                    data = (sent + data)[len(sent):end]
                if data:  # an empty chunk would end the body
                    await send(writer, chunk(data))
                    sent = sent + data if reset else sent
                if end is not None:
                    break
            if reset:
                abort_with_reset(writer)
                return False
            await send(writer, LAST_CHUNK)
            return request.keep_alive
        except httpx.HTTPError:
            return False  # the upstream broke mid-answer: so does the client's stream (no last chunk)
        finally:
            await response.aclose()


def _carries_key(authorization: str | None, key: str) -> bool:
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())


def _end_of_events(stream: bytes, count: int) -> int | None:
    """Where the ``count``-th server-sent event of ``stream`` ends; None if fewer have arrived."""
    end = 0
    for _ in range(count):
        found = stream.find(b"\n\n", end)
        if found < 0:
            return None
        end = found + 2
    return end


@contextmanager
def proxy_in_thread(upstream: str, *, ssl_context: ssl.SSLContext | None = None, api_key: str | None = None,
                    faults: FaultPlan = _NO_FAULTS, port: int = 0) -> Iterator[tuple[str, EndpointProxy]]:
    """Serve a proxy on a thread with its own loop, for code under test that blocks or runs its own loop; yields
    ``(url, proxy)``. ``proxy.seen`` is appended to from that thread. The thread is joined on exit."""
    proxy = EndpointProxy(upstream, ssl_context=ssl_context, api_key=api_key, faults=faults, port=port)
    started = threading.Event()
    stopping: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
    failure: list[BaseException] = []

    async def serve() -> None:
        stop = asyncio.Event()
        stopping.append((asyncio.get_running_loop(), stop))
        async with proxy:
            started.set()
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as error:  # BaseException: the caller must hear why the proxy did not start
            failure.append(error)
        finally:
            started.set()

    thread = threading.Thread(target=run, name="endpoint-proxy", daemon=True)
    thread.start()
    started.wait()
    if failure:
        thread.join()
        raise failure[0]
    loop, stop = stopping[0]
    try:
        yield proxy.url, proxy
    finally:
        with suppress(RuntimeError):  # the loop has ended already: the proxy failed while serving (raised below)
            loop.call_soon_threadsafe(stop.set)
        thread.join()
    if failure:
        raise failure[0]


async def _serve_until_terminated(proxy: EndpointProxy) -> None:
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with proxy:
        sys.stdout.write(proxy.url + "\n")  # the one line a launching test reads
        sys.stdout.flush()
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM (or Ctrl-C); the first line on stdout is the proxy's URL."""
    parser = argparse.ArgumentParser(prog="python -m harness_testing.endpoint_proxy",
                                     description="A TLS, API-key and fault-injecting reverse proxy on 127.0.0.1.")
    parser.add_argument("--upstream", required=True, help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free one)")
    parser.add_argument("--cert", help="PEM certificate chain: serve https")
    parser.add_argument("--key", help="PEM private key of --cert")
    parser.add_argument("--api-key-env", metavar="VAR", help="require the API key held in this environment variable")
    parser.add_argument("--faults", default="", metavar="SPEC",
                        help='fault plan (grammar: harness_testing.proxy_faults), e.g. "0-2=status:429:1,5=reset"')
    args = parser.parse_args(argv)
    if (args.cert is None) != (args.key is None):
        parser.error("--cert and --key go together")
    ssl_context = None
    if args.cert is not None:
        ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_context.load_cert_chain(args.cert, args.key)
    api_key = None
    if args.api_key_env is not None:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"--api-key-env: the environment variable {args.api_key_env} is unset or empty")
    try:
        faults = FaultPlan.parse(args.faults)
    except ValueError as error:
        parser.error(f"--faults: {error}")
    asyncio.run(_serve_until_terminated(EndpointProxy(args.upstream, ssl_context=ssl_context, api_key=api_key,
                                                      faults=faults, port=args.port)))


if __name__ == "__main__":
    main()
