"""One streamed ``/v1/chat/completions`` request in, one ``StreamedReply`` out: text, assembled tool calls, timing.

This module owns the wire: Server-Sent Events parsing, the assembly of streamed ``tool_calls`` deltas (OpenAI
format, as vLLM's ``chat_completion/serving.py`` and ``tool_parsers/streaming.py`` send them: the first delta of a
call carries ``index``, ``id`` and ``function.name``, later ones only ``function.arguments`` fragments, and one
delta may carry fragments of several calls), per-request TTFT and TPOT, and the classification of server
refusals into causes a user can act on. Every failure comes back as a reply with ``error`` set; only
cancellation and harness bugs raise. It knows nothing of BFCL.

Timing: TTFT is from sending the request to the first chunk that carries generated text, reasoning or a tool-call
fragment (vLLM's first chunk carries only the role). TPOT is (last token-carrying chunk − first) / (tokens − 1),
with tokens from the final ``usage`` chunk (``stream_options.include_usage``), so chunks that pack several tokens
(speculative decoding, tool parsers that buffer) are counted by tokens, not by chunks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

RequestErrorKind = Literal["no_tool_parser", "no_chat_template", "grammar_rejected", "http_status", "timeout",
                           "connection", "stream"]

CAUSES: dict[RequestErrorKind, str] = {
    "no_tool_parser": "the server has no tool-call parser: start vLLM with --enable-auto-tool-choice "
                      "--tool-call-parser <name> (SGLang: --tool-call-parser <name>)",
    "no_chat_template": "the model has no chat template: give the server one with --chat-template <file.jinja>",
    "grammar_rejected": "the server's structured-output (grammar) backend rejected the request's schema",
    "http_status": "the server refused the request",
    "timeout": "the request ran past its time limit",
    "connection": "the server could not be reached",
    "stream": "the response stream broke or carried an error",
}
"""What each request failure means, in words that name the fix where there is one."""

# Order matters: vLLM's "no parser" message also names tool_choice, and a grammar error may quote the template.
_SERVER_MESSAGES: tuple[tuple[RequestErrorKind, re.Pattern[str]], ...] = (
    ("no_tool_parser", re.compile(r"enable-auto-tool-choice|tool-call-parser|tool[ _]call[ _]parser", re.I)),
    ("no_chat_template", re.compile(r"chat[ _]template", re.I)),
    ("grammar_rejected", re.compile(r"grammar|json[ _]?schema|xgrammar|llguidance|guidance|outlines|"
                                    r"structured[ _]output|response_format", re.I)),
)
_MESSAGE_CHARS = 500


@dataclass(frozen=True, slots=True)
class RequestError:
    """Why a request produced no model answer; ``message`` is the server's words (trimmed)."""

    kind: RequestErrorKind
    message: str
    status_code: int | None = None

    @property
    def explanation(self) -> str:
        return f"{CAUSES[self.kind]} ({self.message})" if self.message else CAUSES[self.kind]


@dataclass(frozen=True, slots=True)
class ToolCallText:
    """One assembled tool call as the server sent it: the (sanitised) name and the raw arguments text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StreamedReply:
    """What one streamed chat completion produced, and how fast."""

    content: str = ""
    tool_calls: tuple[ToolCallText, ...] = ()
    finish_reason: str | None = None
    output_tokens: int | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    error: RequestError | None = None
    e2e_s: float | None = None
    """Send to end of stream. A tool parser that holds text back until a call parses makes streamed TPOT read
    near zero, so decoding costs are compared per output token end to end."""


def classify_server_error(message: str, status_code: int | None, default: RequestErrorKind) -> RequestError:
    """Name the cause of a server's refusal from its message (vLLM and SGLang both explain in words)."""
    for kind, pattern in _SERVER_MESSAGES:
        if pattern.search(message):
            return RequestError(kind, message[:_MESSAGE_CHARS], status_code)
    return RequestError(default, message[:_MESSAGE_CHARS], status_code)


def _error_message(body: str) -> str:
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return body.strip()
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or error)
    return str(error)


@dataclass(slots=True)
class _Assembly:
    """The reply as it accumulates over a stream."""

    started: float
    content: list[str] = field(default_factory=list)
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, arguments]
    finish_reason: str | None = None
    usage_tokens: int | None = None
    token_chunks: int = 0
    first: float | None = None
    last: float | None = None

    def add(self, event: dict[str, Any], now: float) -> None:
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.usage_tokens = usage["completion_tokens"]
        for choice in event.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if any(delta.get(key) for key in ("content", "reasoning_content", "reasoning", "tool_calls")):
                self.first = now if self.first is None else self.first
                self.last = now
                self.token_chunks += 1
            if isinstance(delta.get("content"), str):
                self.content.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                self._add_call(call)
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _add_call(self, call: dict[str, Any]) -> None:
        # A server that leaves out ``index`` sends whole calls, one per entry, so each opens a new slot.
        index = call.get("index")
        index = index if isinstance(index, int) else len(self.calls)
        slot = self.calls.setdefault(index, ["", ""])
        function = call.get("function") or {}
        if function.get("name"):
            slot[0] += str(function["name"])
        arguments = function.get("arguments")
        if arguments is not None:
            # Fragments are strings on the wire; a server that sends an object has sent it whole.
            slot[1] += arguments if isinstance(arguments, str) else json.dumps(arguments)

    def reply(self, error: RequestError | None = None) -> StreamedReply:
        tokens = self.usage_tokens if self.usage_tokens is not None else (self.token_chunks or None)
        ttft = self.first - self.started if self.first is not None else None
        tpot = None
        if self.first is not None and self.last is not None and tokens is not None and tokens > 1:
            tpot = (self.last - self.first) / (tokens - 1)
        calls = tuple(ToolCallText(name, arguments) for _, (name, arguments) in sorted(self.calls.items()))
        return StreamedReply("".join(self.content), calls, self.finish_reason, tokens, ttft, tpot, error,
                             e2e_s=time.perf_counter() - self.started)


async def stream_chat(client: httpx.AsyncClient, url: str, body: dict[str, Any], timeout_s: float) -> StreamedReply:
    """POST ``body`` (which must ask for ``stream: true``) and read the event stream to its end."""
    assembly = _Assembly(time.perf_counter())
    responded = False
    try:
        async with asyncio.timeout(timeout_s), client.stream("POST", url, json=body) as response:
            responded = True
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")
                return assembly.reply(classify_server_error(_error_message(text), response.status_code,
                                                            "http_status"))
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[len("data:"):].strip()
                if data == "[DONE]":
                    return assembly.reply()
                try:
                    event = json.loads(data)
                except json.JSONDecodeError:
                    return assembly.reply(RequestError("stream", f"malformed event: {data[:200]}"))
                if not isinstance(event, dict):
                    return assembly.reply(RequestError("stream", f"unexpected event: {data[:200]}"))
                if "error" in event or event.get("object") == "error":  # the latter: older vLLM releases
                    return assembly.reply(classify_server_error(_error_message(data), None, "stream"))
                assembly.add(event, time.perf_counter())
    except (TimeoutError, httpx.TimeoutException):
        return assembly.reply(RequestError("timeout", f"no complete answer within {timeout_s:g} s"))
    except httpx.TransportError as e:
        return assembly.reply(RequestError("stream" if responded else "connection", f"{type(e).__name__}: {e}"))
    if assembly.finish_reason is not None:
        return assembly.reply()  # a finished answer whose server left out the closing [DONE]
    return assembly.reply(RequestError("stream", "the stream ended before the answer finished"))
