"""Reading an OpenAI-compatible event stream: which chunks carry tokens, how many, when they arrived, how it ended.

One definition for every client in the harness: the load client (``client.send_request``) and the tool-call parity
client (``harness.parity.chat_stream``) both feed their events to a ``StreamState`` and both turn it into a
``RequestRecord``, whose properties are the only definitions of TTFT, TPOT, ITL and E2EL. It also reads what a
server says when it refuses (``error_from_payload``, ``error_from_body``). It does not move bytes (``http.py``,
``client.py``) and does not know what a request asked for.

Token counting: the load client asks for ``stream_options.continuous_usage_stats``, so vLLM stamps every chunk with
the cumulative ``usage.completion_tokens``; the tokens a chunk carried are the difference to the previous chunk,
which counts tokens (not chunks) when speculative decoding packs several into one chunk. A stream without it (a
server that ignores the option, or a request that did not ask) gets one token per chunk with non-empty text, and
the final usage chunk still gives the total.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.load.records import ErrorInfo, ErrorKind, RequestRecord

_ERROR_BODY_CHARS = 500

decode_event: Callable[[bytes], Any]
try:
    # Decoding one JSON event per streamed chunk is most of the client's CPU: msgspec does it about 3x faster
    # than the standard library (a declared dependency; vLLM's environment has it too).
    from msgspec.json import decode as decode_event
except ImportError:  # pragma: no cover - a bare environment still works, only slower
    decode_event = json.loads


def completions_text(choice: dict[str, Any]) -> str:
    """The text a ``/v1/completions`` chunk's choice carries."""
    return str(choice.get("text") or "")


def chat_text(choice: dict[str, Any]) -> str:
    """Everything generated that a chat chunk's choice carries; empty for a role-only first chunk."""
    delta = choice.get("delta")
    if type(delta) is not dict:  # no delta object, no generated text
        return ""
    # Reasoning text and tool calls are generated tokens too.
    parts = (delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning"), delta.get("tool_calls"))
    return "".join(part if isinstance(part, str) else json.dumps(part) for part in parts if part)


@dataclass(slots=True)
class StreamState:
    """What one response has delivered so far."""

    streamed_text: Callable[[dict[str, Any]], str]
    """The generated text of a chunk's first choice (``completions_text`` or ``chat_text``)."""
    sent: float
    """``time.perf_counter()`` when the request was sent; chunk times are stored relative to it."""
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    """``usage.prompt_tokens_details.cached_tokens``: prompt tokens served from the prefix cache, when reported."""
    spec_histogram: tuple[int, ...] | None = None
    """``metrics.speculative_decoding.acceptance_histogram`` of the final usage chunk (vLLM's per-request
    speculative-decoding metrics), when the server reports it."""
    text: list[str] | None = None
    """The generated text, piece by piece, when the caller keeps it (an agent feeds it back); None: not kept."""
    done: bool = False
    error: ErrorInfo | None = None
    """The error event the server sent in the stream, if it sent one."""

    def feed(self, data: bytes, at: float) -> bool:
        """Take one SSE data payload that arrived at ``at`` (perf_counter); True when the stream is over.

        The hot path of the whole load generator (once per streamed chunk), hence exact type checks, one decoder
        call and nothing for the error events in the common path; a payload that is not one JSON object raises
        ValueError (a malformed stream).
        """
        if data == b"[DONE]":
            self.done = True
            return True
        payload = decode_event(data)  # raises a ValueError for anything but one JSON document
        if type(payload) is not dict:
            raise ValueError(f"an SSE event is not a JSON object: {data[:80]!r}")
        usage = payload.get("usage")
        cumulative = None
        if type(usage) is dict:
            cumulative = usage.get("completion_tokens")
            prompt = usage.get("prompt_tokens")
            if type(prompt) is int:
                self.prompt_tokens = prompt
            details = usage.get("prompt_tokens_details")
            if type(details) is dict and type(details.get("cached_tokens")) is int:
                self.cached_tokens = details["cached_tokens"]
            if type(cumulative) is not int:
                cumulative = None
            metrics = payload.get("metrics")
            if type(metrics) is dict:  # only on the final usage chunk: off the per-token path
                self.spec_histogram = _acceptance_histogram(metrics)
        choices = payload.get("choices")
        if choices and type(choices) is list and type(choices[0]) is dict:
            if cumulative is not None:
                tokens = cumulative - (self.completion_tokens or 0)
            else:
                tokens = 1 if self.streamed_text(choices[0]) else 0
            if tokens > 0:
                self.chunk_times.append(at - self.sent)
                self.chunk_tokens.append(tokens)
            if self.text is not None:
                self.text.append(self.streamed_text(choices[0]))
        elif "error" in payload or payload.get("object") == "error":
            # Error events carry no choices: {"error": {...}} (vLLM, SGLang), or the error object itself
            # ({"object": "error", "message": ...}, older vLLM releases). Checked here, off the per-token path.
            self.error = error_from_payload(payload, "stream", None)
            return True
        if cumulative is not None:
            self.completion_tokens = cumulative
        return False

    def outcome(self) -> ErrorInfo | None:
        """The load client's verdict on a stream read to its end: complete, and with at least one token."""
        if self.error is not None:
            return self.error
        if not self.done:
            return ErrorInfo("stream", "the stream ended without [DONE]")
        if not self.chunk_times:
            return ErrorInfo("empty", "the stream completed without a single token")
        return None

    def record(self, *, index: int, warmup: bool, input_tokens: int, max_tokens: int, run_start: float,
               ended: float, error: ErrorInfo | None) -> RequestRecord:
        """The request's record: what the stream delivered, on the clock of a run that started at ``run_start``."""
        output_tokens = self.completion_tokens if self.completion_tokens is not None else sum(self.chunk_tokens)
        return RequestRecord(
            index=index,
            warmup=warmup,
            input_tokens=input_tokens,
            max_tokens=max_tokens,
            send_time=self.sent - run_start,
            end_time=ended - run_start,
            chunk_times=tuple(self.chunk_times),
            chunk_tokens=tuple(self.chunk_tokens),
            output_tokens=output_tokens,
            prompt_tokens=self.prompt_tokens,
            error=error,
            cached_tokens=self.cached_tokens,
            spec_histogram=self.spec_histogram,
        )


def _acceptance_histogram(metrics: dict[str, Any]) -> tuple[int, ...] | None:
    """vLLM's per-request ``speculative_decoding.acceptance_histogram`` (steps by drafts accepted), if well formed."""
    spec = metrics.get("speculative_decoding")
    histogram = spec.get("acceptance_histogram") if type(spec) is dict else None
    if type(histogram) is list and all(type(n) is int for n in histogram):
        return tuple(histogram)
    return None


def error_from_payload(payload: Any, kind: ErrorKind, status: int | None) -> ErrorInfo:
    """What a server said in an error body or event, as an ErrorInfo.

    Reads OpenAI's ``{"error": {"message", "code"}}``, an error object at the top level (``{"object": "error",
    "message"}``), FastAPI's ``{"detail": ...}``, or any other body as its text.
    """
    error = (payload.get("error") or payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        message = str(error.get("message") or error.get("detail") or error)
        code = error.get("code")
        status = status if status is not None else (code if isinstance(code, int) else None)
    else:
        message = str(error).strip()
    return ErrorInfo(kind, message[:_ERROR_BODY_CHARS], status)


def error_from_body(status: int, body: bytes) -> ErrorInfo:
    """A non-200 answer as an ``http_status`` ErrorInfo carrying the server's message."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return error_from_payload(parsed, "http_status", status)
