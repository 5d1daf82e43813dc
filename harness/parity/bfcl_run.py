"""Run BFCL items against one OpenAI-compatible server under one decoding: items in, a ``ParityRun`` out.

This module owns the request each item becomes (BFCL's messages and tools, temperature 0, a seed, a token cap,
streamed with usage) and the bounded-concurrency loop; requests travel on the load client's transport
(``harness.load.client.make_client``: its lean connection pool against ``http://`` servers). Every way a run can
fail is data: a server without a tool-call parser or a model without a chat template stops the run at the first
refusal (every other request would be refused the same way) and the run's ``error`` names the cause and the fix;
a schema the grammar backend rejects costs only that item; a run in which no request got an answer says so. Only
a bad argument (an unknown decoding) or a harness fault raises.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx

from harness.bfcl.package import bfcl
from harness.bfcl.tools import ToolSet, to_tools
from harness.load.client import StreamingClient, make_client
from harness.parity.bfcl_data import BfclItem
from harness.parity.chat_stream import StreamedReply, stream_chat
from harness.parity.decoding import Decoding, get_decoding
from harness.parity.run_result import ItemErrorKind, ItemRecord, ParityRun, RunSettings, run_failure, summarize_run
from harness.parity.scoring import check
from harness.store import now_iso

log = logging.getLogger(__name__)

RUN_STOPPERS = frozenset({"no_tool_parser", "no_chat_template"})
"""Request failures that every later request of the run would meet too: the run stops at the first."""


def server_root(base_url: str) -> str:
    """A server's base URL without a trailing ``/v1``: the client adds the API paths itself."""
    return base_url.rstrip("/").removesuffix("/v1")


def build_request(item: BfclItem, tool_set: ToolSet, model: str, decoding: Decoding,
                  settings: RunSettings) -> dict[str, Any]:
    """The streamed chat-completions body of one item: BFCL's messages and tools plus the decoding's fields."""
    return {
        "model": model,
        "messages": [dict(message) for message in item.messages],
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed,
        "stream": True,
        "stream_options": {"include_usage": True},
        **decoding.request_fields(tool_set),
        **settings.extra_body,
    }


def judge(item: BfclItem, tool_set: ToolSet, reply: StreamedReply, decoding: Decoding) -> ItemRecord:
    """Decode and score one reply into the item's record."""
    timing = {"finish_reason": reply.finish_reason, "output_tokens": reply.output_tokens,
              "ttft_ms": _ms(reply.ttft_s), "tpot_ms": _ms(reply.tpot_s), "e2e_ms": _ms(reply.e2e_s)}
    if reply.error is not None:
        return ItemRecord(id=item.id, category=item.category, correct=False, malformed=False, no_call=False,
                          calls=None, error_kind=reply.error.kind, error=reply.error.explanation, **timing)
    decoded = decoding.decode(reply, tool_set)
    verdict = check(item, decoded)
    correct, error = verdict.correct, decoded.detail or verdict.error_type
    error_kind: ItemErrorKind | None = decoded.problem
    if reply.finish_reason == "length" and not correct:
        # BFCL judges what decodes, never finish_reason: a truncated text answer to an irrelevance item is still
        # "no call" and right. Where the answer is wrong, truncation is the likelier cause, so it is named.
        error_kind = "truncated"
        error = f"stopped at max_tokens ({reply.output_tokens} tokens)" + (f"; {error}" if error else "")
    return ItemRecord(id=item.id, category=item.category, correct=correct, malformed=decoded.malformed,
                      no_call=decoded.no_call, calls=decoded.calls, error_kind=error_kind, error=error, **timing)


async def run_bfcl(base_url: str, model: str, items: Sequence[BfclItem], settings: RunSettings, *,
                   transport: httpx.AsyncBaseTransport | None = None) -> ParityRun:
    """Send every item the settings' decoding can serve, ``settings.concurrency`` at a time, and summarise the
    answers; ``transport``: an httpx transport to send through (tests use ``httpx.MockTransport``)."""
    variant = get_decoding(settings.decoding)
    settings = settings.model_copy(update={"decoding": variant.name})
    concurrency, timeout_s = settings.concurrency, settings.timeout_s
    runnable = [item for item in items if variant.can_decline or not item.wants_no_call]
    skipped = tuple(dict.fromkeys(item.category for item in items if not variant.can_decline and item.wants_no_call))
    started_at, started = now_iso(), time.perf_counter()
    replies: dict[int, tuple[BfclItem, ToolSet, StreamedReply]] = {}
    stop: StreamedReply | None = None
    queue = iter(enumerate(runnable))

    async def worker(client: StreamingClient) -> None:
        nonlocal stop
        # One shared iterator: each item is taken once, and no new item is taken after a run-stopping refusal.
        for index, item in queue:
            if stop is not None:
                return
            tool_set = to_tools(item.prompt_functions)
            reply = await stream_chat(client, build_request(item, tool_set, model, variant, settings), timeout_s)
            replies[index] = (item, tool_set, reply)
            if reply.error is not None and reply.error.kind in RUN_STOPPERS and stop is None:
                stop = reply

    # At most ``concurrency`` workers, each with one request in flight: the pool never holds more connections.
    async with make_client(server_root(base_url), concurrency=concurrency, timeout_s=timeout_s,
                           transport=transport) as client:
        await asyncio.gather(*(worker(client) for _ in range(min(concurrency, len(runnable)))))
    wall_s = time.perf_counter() - started

    # Judged after the last request: the checker's CPU time inside the event loop would delay the arrival times
    # of chunks still streaming, and so the TTFT/TPOT this run measures.
    done = [judge(*replies[i], variant) for i in sorted(replies)]
    error: str | None = None
    error_kind: ItemErrorKind | None = None
    if stop is not None and stop.error is not None:
        error, error_kind = stop.error.explanation, stop.error.kind
    elif not items:
        error = "no BFCL items to run"
    elif not runnable:
        error = f"decoding {variant.name!r} cannot serve any of the categories {list(skipped)}"
    elif (failure := run_failure(done)) is not None:
        error, error_kind = failure
    if error is not None:
        log.warning("BFCL run on %s (%s) failed: %s", base_url, variant.name, error)
    return summarize_run(done, model=model, base_url=base_url, decoding=variant.name, bfcl_version=bfcl().version,
                         settings=settings, started_at=started_at, wall_s=wall_s,
                         error=error, error_kind=error_kind, skipped_categories=skipped)


def _ms(seconds: float | None) -> float | None:
    return seconds * 1000.0 if seconds is not None else None
