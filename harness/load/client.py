"""A streaming OpenAI-compatible client: one ``PlannedRequest`` in, one ``RequestRecord`` out.

This module owns the wire format (request bodies for ``/v1/completions`` and ``/v1/chat/completions``, event
parsing, token counting) and the per-request timing. Moving bytes is ``http.py``'s ``ConnectionPool`` against a
real server, or ``HttpxClient`` over any httpx transport (the unit tests' seam). It does not schedule requests
(``runner.py``) or compute statistics (``harness.metrics.summary``). Every failure of a request (HTTP status, timeout,
refused connection, broken or malformed stream) comes back as a record with ``error`` set; only cancellation
and harness bugs raise.

Token counting: requests ask for ``stream_options.continuous_usage_stats``, so vLLM stamps every chunk with the
cumulative ``usage.completion_tokens``; the tokens a chunk carried are the difference to the previous chunk,
which counts tokens (not chunks) when speculative decoding packs several into one chunk. A server that ignores
the option gets one token per chunk with non-empty text, and the final usage chunk still gives the total.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from harness.load.http import ConnectionBroken, ConnectionPool, EventSink
from harness.load.prompts import Api, PlannedRequest
from harness.load.records import ErrorInfo, ErrorKind, RequestRecord

_ERROR_BODY_CHARS = 500

decode_event: Callable[[bytes], Any]
try:
    # Decoding one JSON event per streamed chunk is most of the client's CPU: msgspec does it about 3x faster
    # than the standard library (a declared dependency; vLLM's environment has it too).
    from msgspec.json import decode as decode_event
except ImportError:  # pragma: no cover - a bare environment still works, only slower
    decode_event = json.loads


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
    fields: dict[str, Any] = {"messages": [{"role": "user", "content": str(request.prompt)}]}
    if request.tools:
        fields["tools"] = list(request.tools)
        if request.tool_choice is not None:
            fields["tool_choice"] = request.tool_choice
    return fields


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


class StreamingClient(Protocol):
    """What ``send_request`` needs of a connection: POST a JSON body, get its SSE events fed to a sink."""

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]: ...

    async def __aenter__(self) -> StreamingClient: ...

    async def __aexit__(self, *exc: object) -> None: ...


class HttpxClient:
    """The same contract over ``httpx``: the test seam (``MockTransport``, ``ASGITransport``) and ``https://``.

    Slower than ``ConnectionPool`` (several awaits per chunk); never the default against a real server.
    """

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def __aenter__(self) -> HttpxClient:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(None, None, None)

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        responded = False
        try:
            async with self.client.stream("POST", path, content=body, headers=headers) as response:
                responded = True
                if response.status_code != 200:
                    return response.status_code, await response.aread()
                # Lines split on \n only: str.splitlines would also break a payload at U+2028 and friends.
                buffer = b""
                async for piece in response.aiter_bytes():
                    at = time.perf_counter()
                    *lines, buffer = (buffer + piece).split(b"\n")
                    for line in lines:
                        if line.startswith(b"data:") and sink(line[5:].strip(), at):
                            return 200, b""
                if buffer.startswith(b"data:"):
                    sink(buffer[5:].strip(), time.perf_counter())
                return 200, b""
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise ConnectionBroken(f"{type(exc).__name__}: {exc}", responded=responded) from exc


def make_client(
    base_url: str, *, concurrency: int, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None
) -> StreamingClient:
    """A client for ``base_url``: the lean ``ConnectionPool`` for real servers; ``transport`` is the test seam."""
    if transport is None and base_url.startswith("http://"):
        return ConnectionPool(base_url)
    return HttpxClient(httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=httpx.Timeout(timeout_s),
        limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        # Proxy variables in the environment must not reroute traffic meant for a local server.
        trust_env=False,
    ))


@dataclass(slots=True)
class _StreamState:
    """What one response has delivered so far."""

    endpoint: Endpoint
    sent: float
    """``time.perf_counter()`` when the request was sent; chunk times are stored relative to it."""
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    done: bool = False
    error: ErrorInfo | None = None

    def feed(self, data: bytes, at: float) -> bool:
        """Take one SSE data payload that arrived at ``at`` (perf_counter); True when the stream is over.

        The hot path of the whole load generator (once per streamed chunk), hence exact type checks and one
        decoder call; a payload that is not one JSON object raises ValueError (a malformed stream).
        """
        if data == b"[DONE]":
            self.done = True
            return True
        payload = decode_event(data)  # raises a ValueError for anything but one JSON document
        if type(payload) is not dict:
            raise ValueError(f"an SSE event is not a JSON object: {data[:80]!r}")
        if "error" in payload:
            self.error = _error_from_payload(payload, "stream", None)
            return True
        usage = payload.get("usage")
        cumulative = None
        if type(usage) is dict:
            cumulative = usage.get("completion_tokens")
            prompt = usage.get("prompt_tokens")
            if type(prompt) is int:
                self.prompt_tokens = prompt
            if type(cumulative) is not int:
                cumulative = None
        choices = payload.get("choices")
        if choices and type(choices) is list and type(choices[0]) is dict:
            if cumulative is not None:
                tokens = cumulative - (self.completion_tokens or 0)
            else:
                tokens = 1 if self.endpoint.streamed_text(choices[0]) else 0
            if tokens > 0:
                self.chunk_times.append(at - self.sent)
                self.chunk_tokens.append(tokens)
        if cumulative is not None:
            self.completion_tokens = cumulative
        return False

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


async def send_request(
    client: StreamingClient, request: PlannedRequest, *, model: str, run_start: float, timeout_s: float
) -> RequestRecord:
    """Send one streaming request and record its timings; never raises for a failed request.

    Args:
        run_start: ``time.perf_counter()`` at the start of the load run; record times are relative to it.
        timeout_s: limit on the whole request, from send to the last byte.
    """
    endpoint = ENDPOINTS[request.api]
    body = json.dumps(request_body(request, model), separators=(",", ":")).encode()
    error: ErrorInfo | None = None
    sent = time.perf_counter()
    state = _StreamState(endpoint, sent)
    try:
        async with asyncio.timeout(timeout_s):
            status, answer = await client.post_events(endpoint.path, body, state.feed)
        if status != 200:
            text = answer.decode("utf-8", errors="replace")
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = text
            error = _error_from_payload(parsed, "http_status", status)
        else:
            error = state.outcome()
    except TimeoutError:
        error = ErrorInfo("timeout", f"no complete response within {timeout_s:g} s")
    except ConnectionBroken as exc:
        # Before the response headers nobody answered (server down); after them the stream broke.
        error = ErrorInfo("stream" if exc.responded else "connection", str(exc))
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
