"""One generation of the fake engine: as many tokens as asked, streamed as vLLM frames them (a usage chunk where
asked, ``[DONE]`` last) or answered whole, its text kept on the server and its tokens counted."""

from __future__ import annotations

import json
import random

from prometheus_client import generate_latest

from harness_testing.fake_config import FakeConfig
from harness_testing.fake_engine import FakeServer
from harness_testing.fake_stream import FakeStream


def _stream(chat: bool, *, speculative_k: int = 0) -> tuple[FakeServer, FakeStream]:
    server = FakeServer(FakeConfig(ttft_ms=0, itl_ms=0, speculative_k=speculative_k))
    return server, FakeStream(server, 7, chat, "m", prompt_tokens=11, rng=random.Random(0), cached_tokens=4)


async def test_a_streamed_chat_answer_is_framed_as_vllm_frames_it() -> None:
    server, stream = _stream(chat=True)
    events = [e async for e in stream.events(5, include_usage=True, continuous=False)]
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    words = "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:-1]).split()
    assert len(words) == 5 and chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {
        "prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16, "prompt_tokens_details": {"cached_tokens": 4}}
    assert server.answers["chatcmpl-fake-7"].split() == words and server.active == 0


async def test_a_whole_completion_counts_its_tokens() -> None:
    server, stream = _stream(chat=False)
    answer = await stream.whole(6)
    assert answer["object"] == "text_completion" and len(answer["choices"][0]["text"].split()) == 6
    assert answer["usage"]["completion_tokens"] == 6 and "prompt_tokens_details" not in answer["usage"]
    counted = generate_latest(server.counters.registry).decode()
    assert 'vllm:generation_tokens_total{engine="0",model_name="fake-model"} 6.0' in counted


async def test_speculation_streams_several_tokens_a_step_and_still_stops_at_the_limit() -> None:
    _, stream = _stream(chat=False, speculative_k=3)
    events = [e async for e in stream.events(40, include_usage=False, continuous=False)]
    texts = [json.loads(e.removeprefix("data: "))["choices"][0]["text"] for e in events[:-1]]
    assert sum(len(t.split()) for t in texts) == 40 and len(texts) < 40
