"""One streamed ``/v1/chat/completions`` request in, one ``StreamedReply`` out: text, assembled tool calls, timing.

The request travels as a load-test request does: through ``harness.load.client``'s transport (``make_client``,
``post_stream``), its events read by ``harness.load.openai_stream.StreamState``, which stamps the token-carrying
chunks and counts tokens. The reply carries the ``RequestRecord`` that state makes, so TTFT and TPOT here are the
load client's by construction: TTFT from sending to the first chunk that carries text, reasoning or a tool-call
fragment (vLLM's first chunk carries only the role); TPOT (last token-carrying chunk - first) / (tokens - 1), with
tokens from the final ``usage`` chunk, so chunks that pack several tokens are counted by tokens, not by chunks.

What this module adds: the assembly of streamed ``tool_calls`` deltas (OpenAI format, as vLLM's
``chat_completion/serving.py`` and ``tool_parsers/streaming.py`` send them: the first delta of a call carries
``index``, ``id`` and ``function.name``, later ones only ``function.arguments`` fragments, and one delta may carry
fragments of several calls); what a finished answer is here (a ``finish_reason`` without the closing ``[DONE]`` is
one, and so is an empty answer: it means "no call"); and the classification of server refusals into causes a user
can act on. Every failure comes back as a reply with ``error`` set; only cancellation and harness bugs raise. It
knows nothing of BFCL.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.load.client import ENDPOINTS, StreamingClient, post_stream
from harness.load.openai_stream import StreamState, chat_text, decode_event
from harness.load.records import ErrorInfo, ErrorKind, RequestRecord

CHAT_PATH = ENDPOINTS["chat"].path

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


def classify_server_error(message: str, status_code: int | None, default: RequestErrorKind) -> RequestError:
    """Name the cause of a server's refusal from its message (vLLM and SGLang both explain in words)."""
    for kind, pattern in _SERVER_MESSAGES:
        if pattern.search(message):
            return RequestError(kind, message[:_MESSAGE_CHARS], status_code)
    return RequestError(default, message[:_MESSAGE_CHARS], status_code)


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
    error: RequestError | None = None
    record: RequestRecord | None = None
    """The load client's record of the exchange (chunk arrivals, token counts); None for a reply made by hand."""

    @property
    def output_tokens(self) -> int | None:
        """Tokens generated (the final usage count, else one per token-carrying chunk); None when none arrived."""
        return (self.record.output_tokens or None) if self.record is not None else None

    @property
    def ttft_s(self) -> float | None:
        return self.record.ttft if self.record is not None else None

    @property
    def tpot_s(self) -> float | None:
        return self.record.tpot if self.record is not None else None

    @property
    def e2e_s(self) -> float | None:
        """Send to end of stream. A tool parser that holds text back until a call parses makes streamed TPOT read
        near zero, so decoding costs are compared per output token end to end."""
        return self.record.end_time - self.record.send_time if self.record is not None else None


_KINDS: Mapping[ErrorKind, RequestErrorKind] = {
    "http_status": "http_status", "timeout": "timeout", "connection": "connection", "stream": "stream",
    "empty": "stream", "not_sent": "connection",  # the last two never come from one chat exchange
}


@dataclass(slots=True)
class ToolCallAssembly:
    """The message of choice 0 as its deltas arrive: content, tool calls folded per index, finish reason.

    Tolerant of any JSON shape (a wrong one is skipped): it runs inside the transport's read callback, where only a
    ValueError is turned into a failed request.
    """

    content: list[str] = field(default_factory=list)
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, arguments]
    finish_reason: str | None = None

    def add(self, event: dict[str, Any]) -> None:
        choices = event.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                if isinstance(delta.get("content"), str):
                    self.content.append(delta["content"])
                calls = delta.get("tool_calls")
                for call in calls if isinstance(calls, list) else ():
                    if isinstance(call, dict):
                        self._add_call(call)
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _add_call(self, call: dict[str, Any]) -> None:
        # A server that leaves out ``index`` sends whole calls, one per entry, so each opens a new slot.
        index = call.get("index")
        index = index if isinstance(index, int) else len(self.calls)
        slot = self.calls.setdefault(index, ["", ""])
        function = call.get("function")
        if not isinstance(function, dict):
            return
        if function.get("name"):
            slot[0] += str(function["name"])
        arguments = function.get("arguments")
        if arguments is not None:
            # Fragments are strings on the wire; a server that sends an object has sent it whole.
            slot[1] += arguments if isinstance(arguments, str) else json.dumps(arguments)

    def tool_calls(self) -> tuple[ToolCallText, ...]:
        return tuple(ToolCallText(name, arguments) for _, (name, arguments) in sorted(self.calls.items()))


class ChatStream:
    """One chat completion being read: the load client's ``StreamState`` times it, the assembly keeps the message."""

    def __init__(self, sent: float, max_tokens: int) -> None:
        self.state = StreamState(chat_text, sent)
        self.assembly = ToolCallAssembly()
        self.max_tokens = max_tokens

    def feed(self, data: bytes, at: float) -> bool:
        """The event sink: the shared accounting first (it validates the event and ends the stream at ``[DONE]``
        or an error event), then the assembly. The event is decoded a second time for the assembly; that costs
        about a microsecond per chunk here, and spares the load path any hook in its per-chunk code."""
        if self.state.feed(data, at):
            return True
        self.assembly.add(decode_event(data))
        return False

    def reply(self, failure: ErrorInfo | None, ended: float) -> StreamedReply:
        """The reply, given how the exchange failed (``post_stream``'s answer) and when it ended."""
        from_server = failure is not None and failure.kind == "http_status"
        if failure is None and self.state.error is not None:
            failure, from_server = self.state.error, True
        if failure is None and not self.state.done and self.assembly.finish_reason is None:
            failure = ErrorInfo("stream", "the stream ended before the answer finished")
        error = None
        if failure is not None:
            kind = _KINDS[failure.kind]
            # Only the server's own words name a cause; the harness's messages (timeouts, broken streams) do not.
            error = (classify_server_error(failure.message, failure.status_code, kind) if from_server
                     else RequestError(kind, failure.message, failure.status_code))
        # Parity plans no prompt length: the record's index and input_tokens are 0; prompt_tokens is the server's.
        record = self.state.record(index=0, warmup=False, input_tokens=0, max_tokens=self.max_tokens,
                                   run_start=self.state.sent, ended=ended, error=failure)
        return StreamedReply("".join(self.assembly.content), self.assembly.tool_calls(),
                             self.assembly.finish_reason, error, record)


async def stream_chat(client: StreamingClient, body: Mapping[str, Any], timeout_s: float) -> StreamedReply:
    """POST ``body`` (which must ask for ``stream: true``) to ``/v1/chat/completions`` and read it to its end."""
    payload = json.dumps(body, separators=(",", ":")).encode()
    stream = ChatStream(time.perf_counter(), int(body.get("max_tokens") or 0))
    failure = await post_stream(client, CHAT_PATH, payload, stream.feed, timeout_s)
    return stream.reply(failure, time.perf_counter())
