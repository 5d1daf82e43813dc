"""A streaming OpenAI-compatible client: one ``PlannedRequest`` in, one ``RequestRecord`` out.

This module owns the request side of the wire format (bodies for ``/v1/completions`` and ``/v1/chat/completions``)
and the exchange: ``post_stream`` sends a body through a ``StreamingClient`` (``http.py``'s ``ConnectionPool``
against a real server, or ``HttpxClient`` over any httpx transport, the unit tests' seam) and feeds each event to
a sink, usually an ``openai_stream.StreamState``, which counts tokens and stamps arrivals. Tool-call parity sends
its chat requests through ``make_client`` and ``post_stream`` too. It does not schedule requests (``runner.py``)
or compute statistics (``harness.metrics.cell_summary``). Every failure of a request (HTTP status, timeout, refused
connection, broken or malformed stream) comes back as a record with ``error`` set; only cancellation and harness
bugs raise.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import httpx

from harness.endpoint_access import BudgetSpent, Politeness, http_client, politeness_for
from harness.load.http import ConnectionPool
from harness.load.http_connection import ConnectionBroken, EventSink, Reply, retry_after_seconds
from harness.load.openai_stream import StreamState, chat_text, completions_text, error_from_body
from harness.load.prompts import Api, PlannedRequest
from harness.load.records import ErrorInfo, RequestRecord


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
    messages = list(request.messages) or [{"role": "user", "content": str(request.prompt)}]
    fields: dict[str, Any] = {"messages": messages}
    if request.tools:
        fields["tools"] = list(request.tools)
        if request.tool_choice is not None:
            fields["tool_choice"] = request.tool_choice
    return fields


ENDPOINTS: Mapping[Api, Endpoint] = {
    "completions": Endpoint("/v1/completions", _completions_prompt, completions_text),
    "chat": Endpoint("/v1/chat/completions", _chat_prompt, chat_text),
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
    """What ``post_stream`` needs of a connection: POST a JSON body, get its SSE events fed to a sink."""

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
                    return Reply(response.status_code, await response.aread(),
                                 retry_after_seconds(response.headers.get("retry-after")))
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


class PoliteClient:
    """A client held to its origin's politeness (``harness.endpoint_access``): each request counted against the
    request budget (``BudgetSpent`` once it is spent) and sent only after any pause a 429 asked for."""

    def __init__(self, inner: StreamingClient, politeness: Politeness) -> None:
        self.inner, self.politeness = inner, politeness

    async def __aenter__(self) -> PoliteClient:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.inner.__aexit__(*exc)

    async def post_events(self, path: str, body: bytes, sink: EventSink) -> tuple[int, bytes]:
        await self.politeness.wait_turn()
        self.politeness.take()
        reply = await self.inner.post_events(path, body, sink)
        self.politeness.answered(reply[0], getattr(reply, "retry_after", None))
        return reply


def make_client(
    base_url: str, *, concurrency: int, timeout_s: float, transport: httpx.AsyncBaseTransport | None = None
) -> StreamingClient:
    """A client for ``base_url``: the lean ``ConnectionPool`` for real servers, ``http://`` and ``https://`` alike
    (certificates checked as the origin was granted); ``transport`` is the test seam. Held to the origin's
    politeness where it has one (a deployment's)."""
    client: StreamingClient
    if transport is None and base_url.startswith(("http://", "https://")):
        client = ConnectionPool(base_url)
    else:
        client = HttpxClient(http_client(
            base_url if transport is None else None,
            base_url=base_url,
            transport=transport,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        ))
    politeness = politeness_for(base_url)
    return client if politeness is None else PoliteClient(client, politeness)



async def post_stream(client: StreamingClient, path: str, body: bytes, sink: EventSink,
                      timeout_s: float) -> ErrorInfo | None:
    """POST ``body`` and feed each event of the answer to ``sink``; how the exchange failed, or None.

    None means a 200 answer was read until the sink or the response ended it; whether what arrived is a whole
    answer is the sink's to say. ``timeout_s`` limits the whole exchange, from send to the last byte.
    """
    try:
        async with asyncio.timeout(timeout_s):
            status, answer = await client.post_events(path, body, sink)
    except TimeoutError:
        return ErrorInfo("timeout", f"no complete response within {timeout_s:g} s")
    except ConnectionBroken as exc:
        # Before the response headers nobody answered (server down); after them the stream broke.
        return ErrorInfo("stream" if exc.responded else "connection", str(exc))
    except ValueError as exc:
        return ErrorInfo("stream", f"malformed stream: {exc}")
    except BudgetSpent as exc:
        return ErrorInfo("not_sent", f"not sent: {exc}")
    return error_from_body(status, answer) if status != 200 else None


async def send_request(
    client: StreamingClient, request: PlannedRequest, *, model: str, run_start: float, timeout_s: float
) -> RequestRecord:
    """Send one streaming request and record its timings; never raises for a failed request.

    Args:
        run_start: ``time.perf_counter()`` at the start of the load run; record times are relative to it.
        timeout_s: limit on the whole request, from send to the last byte.
    """
    record, _ = await exchange(client, request, model=model, run_start=run_start, timeout_s=timeout_s)
    return record


async def exchange(
    client: StreamingClient, request: PlannedRequest, *, model: str, run_start: float, timeout_s: float,
    keep_text: bool = False,
) -> tuple[RequestRecord, str]:
    """``send_request``, also returning the generated text when ``keep_text`` (an agent's next turn needs it)."""
    endpoint = ENDPOINTS[request.api]
    body = json.dumps(request_body(request, model), separators=(",", ":")).encode()
    state = StreamState(endpoint.streamed_text, time.perf_counter(), text=[] if keep_text else None)
    error = await post_stream(client, endpoint.path, body, state.feed, timeout_s) or state.outcome()
    record = state.record(index=request.index, warmup=request.warmup, input_tokens=request.input_tokens,
                          max_tokens=request.max_tokens, run_start=run_start, ended=time.perf_counter(), error=error)
    if request.session is not None:
        record = replace(record, session=request.session, turn=request.turn)
    return record, "".join(state.text or ())
