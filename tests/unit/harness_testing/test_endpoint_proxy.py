"""The endpoint proxy over real sockets: a tiny upstream in this loop, the proxy before it, httpx and http.client as
the clients. Streaming, keep-alive, the API key, TLS, every fault, the thread and the CLI; each test ends with
nothing of the proxy left running."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx
import pytest
import trustme

from harness_testing.endpoint_proxy import EndpointProxy, proxy_in_thread
from harness_testing.proxy_faults import FaultPlan

KEY = "sk-proxy-test-0123"
EVENTS = [f'data: {{"n": {n}}}' for n in range(4)] + ["data: [DONE]"]
REPO = Path(__file__).resolve().parents[3]


class Upstream:
    """A tiny OpenAI-compatible server: ``POST /v1/completions`` streams ``EVENTS`` one chunk each, ``GET /v1/models``
    and ``/metrics`` answer at once. It records what reached it; with ``gate`` set, a stream holds after its first
    event until the gate opens."""

    def __init__(self) -> None:
        self.url = ""
        self.received: list[tuple[str, str, dict[str, str]]] = []
        self.gate: asyncio.Event | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Upstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                request_line, *lines = head.split("\r\n")[:-2]
                method, target, _ = request_line.split(" ")
                headers = {name.strip().lower(): value.strip() for name, _, value in (x.partition(":") for x in lines)}
                await reader.readexactly(int(headers.get("content-length", "0")))
                self.received.append((method, target, headers))
                if target.partition("?")[0] == "/v1/completions":
                    await self._stream(writer)
                elif target in ("/v1/models", "/metrics"):
                    body = b'{"object": "list", "data": [{"id": "tiny"}]}' if target == "/v1/models" else b"up 1\n"
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(body), body))
                else:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # CancelledError too: on Python 3.11 a cancelled connection task makes asyncio.streams log an error
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _stream(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-upstream: tiny\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        for n, event in enumerate(EVENTS):
            data = event.encode() + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
            if n == 0 and self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0.005)  # each event its own segment, as an engine sends them
        writer.write(b"0\r\n\r\n")


async def _events(client: httpx.AsyncClient, url: str, **headers: str) -> list[str]:
    async with client.stream("POST", url + "/v1/completions", json={"prompt": "hi", "stream": True},
                             headers=headers) as response:
        assert response.status_code == 200
        return [line async for line in response.aiter_lines() if line]


async def _next_event(lines: AsyncIterator[str]) -> str:
    async for line in lines:
        if line:
            return line
    raise AssertionError("the stream ended before an event")


def _nothing_left_running() -> None:
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert not [thread for thread in threading.enumerate() if thread.name == "endpoint-proxy"]


async def test_streamed_events_pass_through_in_order_as_they_arrive() -> None:
    async with Upstream() as upstream, EndpointProxy(upstream.url) as proxy, httpx.AsyncClient() as client:
        assert proxy.url.startswith("http://127.0.0.1:")
        upstream.gate = asyncio.Event()
        async with client.stream("POST", proxy.url + "/v1/completions?x=1", json={"prompt": "hi"}) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            # the upstream holds the rest until this first event is through: the proxy buffers nothing
            first = await asyncio.wait_for(_next_event(lines), 2.0)
            upstream.gate.set()
            rest = [line async for line in lines if line]
        assert [first, *rest] == EVENTS
        assert response.headers["content-type"] == "text/event-stream" and response.headers["x-upstream"] == "tiny"
        method, target, headers = upstream.received[0]
        assert (method, target) == ("POST", "/v1/completions?x=1")
        assert headers["host"] == urlsplit(upstream.url).netloc and json.loads(headers["content-length"]) > 0
        assert [(seen.method, seen.path, seen.authorized, seen.fault) for seen in proxy.seen] == [
            ("POST", "/v1/completions", None, "pass")]
    _nothing_left_running()


def _two_requests_on_one_connection(url: str) -> tuple[bytes, bytes, bool]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        connection.request("GET", "/v1/models")
        models = connection.getresponse().read()
        sock = connection.sock
        connection.request("POST", "/v1/completions", body=b'{"prompt": "hi"}',
                           headers={"content-type": "application/json"})
        stream = connection.getresponse().read()
        return models, stream, connection.sock is sock
    finally:
        connection.close()


async def test_a_connection_serves_several_requests() -> None:
    async with Upstream() as upstream, EndpointProxy(upstream.url) as proxy:
        models, stream, same_socket = await asyncio.to_thread(_two_requests_on_one_connection, proxy.url)
        assert json.loads(models)["data"][0]["id"] == "tiny"
        assert stream.decode().split("\n\n")[:-1] == EVENTS and same_socket
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1)) as client:
            for _ in range(3):
                assert await _events(client, proxy.url) == EVENTS
        assert proxy.accepted == 2 and len(proxy.seen) == 5
    _nothing_left_running()


async def test_the_api_key_guards_all_but_the_open_paths() -> None:
    async with Upstream() as upstream, EndpointProxy(upstream.url, api_key=KEY) as proxy, \
            httpx.AsyncClient(base_url=proxy.url) as client:
        missing = await client.post("/v1/completions", json={"prompt": "hi"})
        wrong = await client.post("/v1/completions", json={"prompt": "hi"}, headers={"Authorization": "Bearer no"})
        right = await client.post("/v1/completions", json={"prompt": "hi"}, headers={"Authorization": f"Bearer {KEY}"})
        metrics = await client.get("/metrics")
        models = await client.get("/v1/models")
    for refused in (missing, wrong, models):
        assert refused.status_code == 401 and KEY not in refused.text
        assert refused.json()["error"]["type"] == "invalid_request_error" and refused.json()["error"]["code"] == 401
    assert right.status_code == 200 and right.text.split("\n\n")[:-1] == EVENTS
    assert metrics.status_code == 200
    assert [(seen.path, seen.authorized, seen.had_auth_header, seen.fault) for seen in proxy.seen] == [
        ("/v1/completions", False, False, ""), ("/v1/completions", False, True, ""),
        ("/v1/completions", True, True, "pass"), ("/metrics", False, False, ""), ("/v1/models", False, False, "")]
    assert [seen.authorization for seen in proxy.seen] == [None, "Bearer no", f"Bearer {KEY}", None, None]
    assert KEY not in repr(proxy.seen)
    assert [target for _, target, _ in upstream.received] == ["/v1/completions", "/metrics"]
    assert not any("authorization" in headers for _, _, headers in upstream.received)  # the proxy consumes the key


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


async def test_tls_verifies_with_the_test_ca_only(ca: trustme.CA) -> None:
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with Upstream() as upstream, EndpointProxy(upstream.url, ssl_context=_server_context(ca)) as proxy:
        assert proxy.url.startswith("https://localhost:")
        async with httpx.AsyncClient(verify=trusting) as client:
            assert await _events(client, proxy.url) == EVENTS
        async with httpx.AsyncClient() as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(proxy.url + "/v1/models")
    _nothing_left_running()


async def test_status_faults_follow_the_plan_by_inference_index() -> None:
    plan = FaultPlan.parse("0=status:429:1,2-3=status:503")
    async with Upstream() as upstream, EndpointProxy(upstream.url, faults=plan) as proxy, \
            httpx.AsyncClient(base_url=proxy.url) as client:
        answers = []
        for _ in range(5):
            answers.append(await client.post("/v1/completions", json={"prompt": "hi"}))
            assert (await client.get("/v1/models")).status_code == 200  # takes no index
    assert [answer.status_code for answer in answers] == [429, 200, 503, 503, 200]
    assert answers[0].headers["retry-after"] == "1" and "retry-after" not in answers[2].headers
    assert answers[2].json()["error"]["code"] == 503
    assert [seen.fault for seen in proxy.seen if seen.method == "POST"] == [
        "status:429:1", "pass", "status:503", "status:503", "pass"]
    assert len(upstream.received) == 5 + 2  # the faulted requests never reached it


async def test_a_reset_breaks_the_stream_after_its_first_events() -> None:
    plan = FaultPlan.parse("0=reset")
    async with Upstream() as upstream, EndpointProxy(upstream.url, faults=plan) as proxy, \
            httpx.AsyncClient() as client:
        received: list[str] = []
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
            async with client.stream("POST", proxy.url + "/v1/completions", json={"prompt": "hi"}) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    received += [line] if line else []
        assert received == EVENTS[:2]
        assert await _events(client, proxy.url) == EVENTS  # the next request, on a new connection, passes
    _nothing_left_running()


async def test_a_stall_times_the_client_out_and_the_proxy_still_stops_at_once() -> None:
    async with Upstream() as upstream:
        async with EndpointProxy(upstream.url, faults=FaultPlan.parse("*=stall")) as proxy:
            async with httpx.AsyncClient(timeout=1.0) as client:
                with pytest.raises(httpx.ReadTimeout):
                    await client.post(proxy.url + "/v1/completions", json={"prompt": "hi"})
            port = urlsplit(proxy.url).port
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
            while len(proxy.seen) < 2:
                await asyncio.sleep(0.01)
            stopping = time.monotonic()
        assert time.monotonic() - stopping < 0.5  # the still-stalled connection did not hold the shutdown
        assert await reader.read() == b""  # cut, unanswered
        writer.close()
        assert [seen.fault for seen in proxy.seen] == ["stall", "stall"] and upstream.received == []
    _nothing_left_running()


async def test_the_thread_variant_serves_and_joins() -> None:
    async with Upstream() as upstream:
        with proxy_in_thread(upstream.url, faults=FaultPlan.parse("1=status:503")) as (url, proxy):
            async with httpx.AsyncClient() as client:
                assert await _events(client, url) == EVENTS
                assert (await client.post(url + "/v1/completions", json={})).status_code == 503
            assert [seen.fault for seen in proxy.seen] == ["pass", "status:503"]
    _nothing_left_running()


async def test_the_thread_variant_raises_when_the_proxy_cannot_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="address already in use"), \
                proxy_in_thread("http://127.0.0.1:9", port=taken.getsockname()[1]):
            pass
    _nothing_left_running()


async def test_an_unreachable_upstream_is_a_502() -> None:
    with socket.socket() as closed:  # bound, never listening: connections to it are refused
        closed.bind(("127.0.0.1", 0))
        async with EndpointProxy(f"http://127.0.0.1:{closed.getsockname()[1]}") as proxy, \
                httpx.AsyncClient() as client:
            answer = await client.post(proxy.url + "/v1/completions", json={})
    assert answer.status_code == 502 and answer.json()["error"]["type"] == "upstream_error"
    _nothing_left_running()


async def test_the_cli_serves_tls_a_key_and_faults_until_sigterm(ca: trustme.CA, tmp_path: Path) -> None:
    pem = tmp_path / "server.pem"
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(pem))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with Upstream() as upstream:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "harness_testing.endpoint_proxy", "--upstream", upstream.url, "--cert", str(pem),
            "--key", str(pem), "--api-key-env", "PROXY_TEST_KEY", "--faults", "1=status:503", cwd=REPO,
            env={**os.environ, "PROXY_TEST_KEY": KEY}, stdout=asyncio.subprocess.PIPE)
        try:
            assert process.stdout is not None
            url = (await asyncio.wait_for(process.stdout.readline(), 10)).decode().strip()
            assert url.startswith("https://localhost:")
            async with httpx.AsyncClient(verify=trusting, headers={"Authorization": f"Bearer {KEY}"}) as client:
                assert await _events(client, url) == EVENTS
                assert (await client.post(url + "/v1/completions", json={})).status_code == 503
                assert (await client.post(url + "/v1/completions", json={}, headers={"Authorization": ""})
                        ).status_code == 401
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 5) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_the_cli_names_a_bad_fault_spec() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "harness_testing.endpoint_proxy", "--upstream", "http://127.0.0.1:9", "--faults",
        "0=explode", cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await asyncio.wait_for(process.communicate(), 10)
    assert process.returncode == 2 and stdout == b"" and b"'explode'" in stderr
