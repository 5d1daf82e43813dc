"""One generation of the fake engine (``harness_testing.fake_engine``): the chunks of a streamed answer, or the
whole answer at once, paced by the server's clock and counted on its vLLM-named counters as they are sent."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from harness_testing.fake_config import FakeConfig

_WORDS = ("alpha", "beta", "gamma", "delta", "kernel", "expert", "token", "router", "cache", "tensor", "shard",
          "draft", "accept", "batch", "stream", "latency")


class _SuccessCounter(Protocol):
    def inc(self) -> None: ...


class _Counters(Protocol):
    @property
    def success(self) -> _SuccessCounter: ...


class StreamHost(Protocol):
    """What a generation needs of the server it runs on."""

    config: FakeConfig
    active: int
    answers: dict[str, str]

    @property
    def counters(self) -> _Counters: ...

    def plan_steps(self, rng: random.Random, max_tokens: int) -> list[tuple[int, int | None]]: ...

    def count_step(self, tokens: int, accepted: int | None) -> None: ...


class FakeStream:
    """One generation: the chunks of a streamed answer, or the whole answer at once, on the configured clock."""

    def __init__(self, server: StreamHost, number: int, chat: bool, model: str, prompt_tokens: int,
                 rng: random.Random, cached_tokens: int = 0) -> None:
        self.server, self.chat, self.model, self.prompt_tokens, self.rng = server, chat, model, prompt_tokens, rng
        self.cached_tokens = cached_tokens
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-fake-{number}"
        self.created = int(time.time())

    async def _paced(self, max_tokens: int) -> AsyncIterator[tuple[str, int]]:
        """(text, cumulative tokens) per step, each at its due time (deadlines, so sleeps do not drift)."""
        server = self.server
        config = server.config
        due, done, text = time.monotonic() + config.ttft_ms / 1000.0, 0, []
        server.active += 1
        try:
            for i, (tokens, accepted) in enumerate(server.plan_steps(self.rng, max_tokens)):
                if i:
                    due += (config.itl_ms + config.itl_per_active_ms * server.active) / 1000.0
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                done += tokens
                server.count_step(tokens, accepted)
                text.append("".join(" " + self.rng.choice(_WORDS) for _ in range(tokens)))
                yield text[-1], done
        finally:
            server.active -= 1
            server.answers[self.id] = "".join(text)
        server.counters.success.inc()

    def _usage(self, completion_tokens: int) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": self.prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": self.prompt_tokens + completion_tokens}
        if self.chat:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage

    def _chunk(self, choice: dict[str, Any] | None, usage: dict[str, Any] | None) -> str:
        chunk: dict[str, Any] = {"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
                                 "created": self.created, "model": self.model,
                                 "choices": [] if choice is None else [choice]}
        if usage is not None:
            chunk["usage"] = usage
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    async def events(self, max_tokens: int, include_usage: bool, continuous: bool) -> AsyncIterator[str]:
        if self.chat:
            role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                    "finish_reason": None}
            yield self._chunk(role, self._usage(0) if continuous else None)
        done = 0
        async for text, done in self._paced(max_tokens):
            finish = "length" if done >= max_tokens else None
            choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
            choice.update({"delta": {"content": text}} if self.chat else {"text": text, "stop_reason": None})
            yield self._chunk(choice, self._usage(done) if continuous else None)
        if include_usage:
            yield self._chunk(None, self._usage(done))
        yield "data: [DONE]\n\n"

    async def whole(self, max_tokens: int) -> dict[str, Any]:
        text, done = "", 0
        async for piece, done in self._paced(max_tokens):  # noqa: B007 (done is read after the loop)
            text += piece
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": "length"}
        choice.update({"message": {"role": "assistant", "content": text}} if self.chat else {"text": text})
        return {"id": self.id, "object": "chat.completion" if self.chat else "text_completion",
                "created": self.created, "model": self.model, "choices": [choice],
                "usage": self._usage(done)}
