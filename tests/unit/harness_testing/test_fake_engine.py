from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from harness.load import RequestRecord
from harness.load.client import make_client, send_request
from harness.load.prompts import PlannedRequest
from harness.servers.prometheus import scrape, speculation_delta
from harness.servers.vllm import VLLM_SPECULATION
from harness_testing.fake_config import FakeConfig
from harness_testing.fake_engine import create_app


def fast(**overrides: Any) -> FakeConfig:
    """A config that streams in about a millisecond per request."""
    return FakeConfig(**{"ttft_ms": 1.0, "itl_ms": 0.5, **overrides})


def _transport(config: FakeConfig, exits: list[int] | None = None) -> httpx.ASGITransport:
    app = create_app(config, exit_process=(exits.append if exits is not None else _no_exit))
    return httpx.ASGITransport(app=app)


def _no_exit(code: int) -> None:
    raise AssertionError(f"the fake server tried to exit with {code}")


def _request(api: str = "completions", max_tokens: int = 12) -> PlannedRequest:
    prompt: tuple[int, ...] | str = (1, 2, 3, 4, 5) if api == "completions" else "one two three"
    return PlannedRequest(index=0, warmup=False, api=api, prompt=prompt, input_tokens=5,  # type: ignore[arg-type]
                          max_tokens=max_tokens)


async def _send(transport: httpx.AsyncBaseTransport, request: PlannedRequest, model: str = "m") -> RequestRecord:
    async with make_client("http://fake", concurrency=1, timeout_s=5, transport=transport) as client:
        return await send_request(client, request, model=model, run_start=time.perf_counter(), timeout_s=5)


async def test_info_endpoints() -> None:
    async with httpx.AsyncClient(transport=_transport(FakeConfig(model="tiny")), base_url="http://fake") as client:
        assert (await client.get("/health")).status_code == 200
        assert (await client.get("/v1/models")).json()["data"][0]["id"] == "tiny"
        assert "version" in (await client.get("/version")).json()
        metrics = (await client.get("/metrics")).text
    assert "vllm:generation_tokens_total" in metrics and "spec_decode" not in metrics  # speculation off


async def test_health_is_503_during_startup_delay() -> None:
    async with httpx.AsyncClient(transport=_transport(FakeConfig(startup_delay_s=30)), base_url="http://f") as c:
        assert (await c.get("/health")).status_code == 503


@pytest.mark.parametrize("api", ["completions", "chat"])
async def test_streams_exactly_max_tokens_with_continuous_usage(api: str) -> None:
    record = await _send(_transport(fast(tokens_per_chunk=3)), _request(api, max_tokens=11))
    assert record.ok, record.error
    assert record.output_tokens == 11 and sum(record.chunk_tokens) == 11
    assert record.chunk_tokens == (1, 3, 3, 3, 1)
    assert record.prompt_tokens == (5 if api == "completions" else 3 + 4)


async def test_speculation_counters_move_with_the_stream() -> None:
    transport = _transport(fast(speculative_k=3, spec_accept_rate=0.6, seed=1))
    before = await scrape("http://fake", transport=transport)
    records = [await _send(transport, _request(max_tokens=60)) for _ in range(3)]
    stats = speculation_delta(before, await scrape("http://fake", transport=transport), VLLM_SPECULATION)
    assert stats is not None and all(r.ok for r in records)
    decode_chunks = sum(len(r.chunk_tokens) - 1 for r in records)  # the first chunk is prefill's, no draft
    assert stats.drafts == decode_chunks and stats.draft_tokens == 3 * decode_chunks
    assert stats.accepted_tokens == sum(r.output_tokens - len(r.chunk_tokens) for r in records)
    assert any(n > 1 for r in records for n in r.chunk_tokens)
    assert 0.2 < stats.acceptance_rate < 0.8
    assert stats.per_position[0] >= stats.per_position[1] >= stats.per_position[2]  # accepted in order


async def test_plain_responses_and_errors() -> None:
    transport = _transport(fast(model="tiny"))
    async with httpx.AsyncClient(transport=transport, base_url="http://fake") as client:
        plain = (await client.post("/v1/completions", json={"model": "tiny", "prompt": "a b", "max_tokens": 4}))
        chat = await client.post("/v1/chat/completions", json={
            "model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 3})
        wrong = await client.post("/v1/completions", json={"model": "other", "prompt": "a", "max_tokens": 1})
        bad = await client.post("/v1/completions", json={"model": "tiny", "prompt": "a", "max_tokens": 0})
    assert plain.json()["usage"] == {"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6}
    assert len(plain.json()["choices"][0]["text"].split()) == 4
    assert chat.json()["choices"][0]["message"]["role"] == "assistant"
    assert chat.json()["usage"]["completion_tokens"] == 3
    assert wrong.status_code == 404 and "other" in wrong.json()["error"]["message"]
    assert bad.status_code == 400


async def test_error_rate_gives_http_500_records() -> None:
    record = await _send(_transport(fast(error_rate=1.0)), _request())
    assert record.error is not None and (record.error.kind, record.error.status_code) == ("http_status", 500)


async def test_dies_on_the_request_after_the_limit() -> None:
    exits: list[int] = []
    transport = _transport(fast(die_after_requests=1), exits)
    assert (await _send(transport, _request())).ok and exits == []
    await _send(transport, _request())
    assert exits == [1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_cli_fail_startup() -> None:
    done = subprocess.run([sys.executable, "-m", "harness_testing.fake_engine", "--port", "1", "--fail-startup"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "startup failed" in done.stderr and done.stdout == ""


def test_cli_serves_then_crashes_mid_cell() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_testing.fake_engine", "--port", str(port), "--die-after-requests", "1",
         "--ttft-ms", "1", "--itl-ms", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the fake server never became healthy: {proc.communicate(timeout=5)[1]}")
            time.sleep(0.05)
        body = {"prompt": [1, 2], "max_tokens": 3, "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
        first = httpx.post(f"{url}/v1/completions", json=body, timeout=5)
        assert first.status_code == 200 and first.text.rstrip().endswith("data: [DONE]")
        assert json.loads(first.text.split("\n\n")[0].removeprefix("data: "))["usage"]["completion_tokens"] == 1
        with pytest.raises(httpx.TransportError):
            httpx.post(f"{url}/v1/completions", json=body, timeout=5)
        assert proc.wait(timeout=10) == 1
        stdout, stderr = proc.communicate(timeout=5)
        assert stdout == "" and "request 1" in stderr and "dying" in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=5)  # reaps the process and closes its pipes
