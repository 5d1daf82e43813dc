"""A streaming OpenAI-compatible client: one ``PlannedRequest`` in, one ``RequestRecord`` out.

This module owns the wire format (request bodies for ``/v1/completions`` and ``/v1/chat/completions``, SSE
parsing, token counting) and the per-request timing. It does not schedule requests (``runner.py``) or compute
statistics (``harness.metrics``). Every failure of a request (HTTP status, timeout, refused connection, broken
or malformed stream) comes back as a record with ``error`` set; only cancellation and harness bugs raise.

Token counting: requests ask for ``stream_options.continuous_usage_stats``, so vLLM stamps every chunk with the
cumulative ``usage.completion_tokens``; the tokens a chunk carried are the difference to the previous chunk,
which counts tokens (not chunks) when speculative decoding packs several into one chunk. A server that ignores
the option gets one token per chunk with non-empty text, and the final usage chunk still gives the total.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.load.prompts import Api, PlannedRequest
from harness.load.records import ErrorInfo, ErrorKind, RequestRecord

_ERROR_BODY_CHARS = 500


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How one OpenAI API is spoken: where to post, what to post, where the streamed text is."""

    path: str
    prompt_fields: Callable[[PlannedRequest], dict[str, Any]]
    streamed_text: Callable[[dict[str, Any]], str]


def _completions_prompt(request: PlannedRequest) -> dict[str, Any]:
    prompt = request.prompt if isinstance(request.prompt, str) else list(request.prompt)
    return {"prompt": prompt}


def _chat_prompt(request: PlannedRequest) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": str(request.prompt)}]}


def _completions_text(choice: dict[str, Any]) -> str:
    return str(choice.get("text") or "")


def _chat_text(choice: dict[str, Any]) -> str:
    delta = choice.get("delta") or {}
    # Reasoning text and tool calls are generated tokens too; a role-only first chunk carries none.
    parts = (delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning"), delta.get("tool_calls"))
    return "".join(part if isinstance(part, str) else json.dumps(part) for part in parts if part)


ENDPOINTS: Mapping[Api, Endpoint] = {
    "completions": Endpoint("/v1/completions", _completions_prompt, _completions_text),
    "chat": Endpoint("/v1/chat/completions", _chat_prompt, _chat_text),
}


def request_body(request: PlannedRequest, model: str) -> dict[str, Any]:
    """The JSON body for a planned request (``ignore_eos`` is vLLM's and SGLang's top-level extra)."""
    return {
        "model": model,
        **ENDPOINTS[request.api].prompt_fields(request),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "ignore_eos": request.ignore_eos,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


def make_client(
    base_url: str, *, concurrency: int, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """An HTTP client with a connection for every request in flight; ``transport`` is the test seam."""
    return httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=httpx.Timeout(timeout_s),
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        # Proxy variables in the environment must not reroute traffic meant for a local server.
        trust_env=False,
    )


@dataclass(slots=True)
class _StreamState:
    """What one response has delivered so far."""

    endpoint: Endpoint
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    done: bool = False
    error: ErrorInfo | None = None

    def feed(self, data: str, at: float) -> bool:
        """Take one SSE data payload that arrived ``at`` seconds after send; True when the stream is over."""
        if data == "[DONE]":
            self.done = True
            return True
        payload = json.loads(data)
        if not isinstance(payload, dict):
            raise ValueError(f"an SSE event is not a JSON object: {data[:80]!r}")
        if "error" in payload:
            self.error = _error_from_payload(payload, "stream", None)
            return True
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
        choices = payload.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            tokens = self._tokens_in(choices[0], usage)
            if tokens > 0:
                self.chunk_times.append(at)
                self.chunk_tokens.append(tokens)
        if usage is not None:
            if isinstance(usage.get("completion_tokens"), int):
                self.completion_tokens = usage["completion_tokens"]
            if isinstance(usage.get("prompt_tokens"), int):
                self.prompt_tokens = usage["prompt_tokens"]
        return False

    def _tokens_in(self, choice: dict[str, Any], usage: dict[str, Any] | None) -> int:
        cumulative = usage.get("completion_tokens") if usage is not None else None
        if isinstance(cumulative, int):
            return cumulative - (self.completion_tokens or 0)
        return 1 if self.endpoint.streamed_text(choice) else 0

    def outcome(self) -> ErrorInfo | None:
        if self.error is not None:
            return self.error
        if not self.done:
            return ErrorInfo("stream", "the stream ended without [DONE]")
        if not self.chunk_times:
            return ErrorInfo("empty", "the stream completed without a single token")
        return None


def _error_from_payload(payload: Any, kind: ErrorKind, status: int | None) -> ErrorInfo:
    """An OpenAI-style ``{"error": {"message", "code"}}`` (or any body) as an ErrorInfo."""
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or error)
        code = error.get("code")
        status = status if status is not None else (code if isinstance(code, int) else None)
    else:
        message = str(error if error is not None else payload)
    return ErrorInfo(kind, message[:_ERROR_BODY_CHARS], status)


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data:`` payloads of an SSE stream.

    Lines split on ``\\n`` only: pydantic writes non-ASCII unescaped, and ``str.splitlines`` would also break a
    payload at U+2028 and friends, which random-token text does produce.
    """
    buffer = b""
    async for piece in response.aiter_bytes():
        buffer += piece
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:].strip().decode("utf-8")
    if buffer.startswith(b"data:"):
        yield buffer[5:].strip().decode("utf-8")


async def send_request(
    client: httpx.AsyncClient, request: PlannedRequest, *, model: str, run_start: float, timeout_s: float
) -> RequestRecord:
    """Send one streaming request and record its timings; never raises for a failed request.

    Args:
        run_start: ``time.perf_counter()`` at the start of the load run; record times are relative to it.
        timeout_s: limit on the whole request, from send to the last byte.
    """
    endpoint = ENDPOINTS[request.api]
    state = _StreamState(endpoint)
    started = False
    error: ErrorInfo | None = None
    sent = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("POST", endpoint.path, json=request_body(request, model)) as response:
                started = True
                if response.status_code != 200:
                    body = (await response.aread()).decode("utf-8", errors="replace")
                    try:
                        parsed: Any = json.loads(body)
                    except ValueError:
                        parsed = body
                    error = _error_from_payload(parsed, "http_status", response.status_code)
                else:
                    async for data in _sse_data(response):
                        if state.feed(data, time.perf_counter() - sent):
                            break
                    error = state.outcome()
    except (TimeoutError, httpx.TimeoutException):
        error = ErrorInfo("timeout", f"no complete response within {timeout_s:g} s")
    except (httpx.HTTPError, OSError) as exc:
        # Before the response headers nobody answered (server down); after them the stream broke.
        error = ErrorInfo("stream" if started else "connection", f"{type(exc).__name__}: {exc}")
    except ValueError as exc:
        error = ErrorInfo("stream", f"malformed stream: {exc}")
    ended = time.perf_counter()
    output_tokens = state.completion_tokens if state.completion_tokens is not None else sum(state.chunk_tokens)
    return RequestRecord(
        index=request.index,
        warmup=request.warmup,
        input_tokens=request.input_tokens,
        max_tokens=request.max_tokens,
        send_time=sent - run_start,
        end_time=ended - run_start,
        chunk_times=tuple(state.chunk_times),
        chunk_tokens=tuple(state.chunk_tokens),
        output_tokens=output_tokens,
        prompt_tokens=state.prompt_tokens,
        error=error,
    )
