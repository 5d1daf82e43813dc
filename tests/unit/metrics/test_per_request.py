"""Acceptance per request: from vLLM's per-request histogram, or from the stream's chunks; pooled over launches."""

from __future__ import annotations

import json

import pytest

from harness.load import RequestRecord
from harness.load.openai_stream import StreamState, completions_text
from harness.metrics import combine_launches, summarize
from harness.metrics.per_request import pool_request_acceptance, request_acceptance


def record(chunks: tuple[int, ...], histogram: tuple[int, ...] | None = None, index: int = 0) -> RequestRecord:
    times = tuple(0.01 * (i + 1) for i in range(len(chunks)))
    return RequestRecord(index=index, warmup=False, input_tokens=8, max_tokens=64, send_time=0.0, end_time=1.0,
                         chunk_times=times, chunk_tokens=chunks, output_tokens=sum(chunks), spec_histogram=histogram)


def test_the_stream_reads_tokens_per_step_and_the_server_its_histogram() -> None:
    # first chunk the prefill's one token; then 4 steps carrying 2, 1, 3, 2 tokens
    r = record((1, 2, 1, 3, 2), histogram=(1, 2, 1))  # 4 steps: one accepted 0 drafts, two 1, one 2
    assert r.steps_acceptance_length == pytest.approx(2.0)
    assert r.server_acceptance_length == pytest.approx(1 + (0 + 2 + 2) / 4)
    assert record((1, 1, 1)).steps_acceptance_length == 1.0  # without speculation: one token per step
    assert record((1,)).steps_acceptance_length is None  # nothing decoded after the first chunk
    assert record((1, 1), histogram=(0, 0)).server_acceptance_length is None  # no verify step reported


def test_the_final_usage_chunk_carries_the_histogram_and_the_record_keeps_it() -> None:
    state = StreamState(completions_text, sent=0.0)
    events = [{"choices": [{"text": "a"}], "usage": {"completion_tokens": 1, "prompt_tokens": 8}},
              {"choices": [{"text": "bc"}], "usage": {"completion_tokens": 3, "prompt_tokens": 8}},
              {"choices": [], "usage": {"completion_tokens": 3, "prompt_tokens": 8},
               "metrics": {"speculative_decoding": {"mean_acceptance_length": 2.0, "acceptance_histogram": [0, 1],
                                                    "num_spec_steps": 1, "num_spec_tokens": 1}}}]
    for i, event in enumerate(events):
        state.feed(json.dumps(event).encode(), at=0.1 * (i + 1))
    state.feed(b"[DONE]", at=0.5)
    r = state.record(index=0, warmup=False, input_tokens=8, max_tokens=3, run_start=0.0, ended=0.5, error=None)
    assert r.spec_histogram == (0, 1) and r.server_acceptance_length == 2.0
    assert RequestRecord.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_the_server_source_only_when_every_request_has_it() -> None:
    both = request_acceptance([record((1, 2, 2), (0, 2)), record((1, 1, 2), (1, 1))])
    assert both is not None and both.source == "server" and both.lengths == (2.0, 1.5)
    assert both.stream_lengths == (2.0, 1.5)
    mixed = request_acceptance([record((1, 2, 2), (0, 2)), record((1, 3, 1))])
    assert mixed is not None and mixed.source == "stream" and mixed.lengths == (2.0, 2.0)
    assert request_acceptance([record((1,))]) is None


def test_launches_pool_every_request_into_the_summary() -> None:
    one = summarize([record((1, 2, 2), (0, 2), index=i) for i in range(3)], duration_s=1.0)
    two = summarize([record((1, 1, 2), (1, 1), index=i) for i in range(2)], duration_s=1.0)
    assert one.acceptance_per_request is not None and one.acceptance_per_request.median == 2.0
    pooled = combine_launches([one, two]).acceptance_per_request
    assert pooled is not None and pooled.source == "server" and sorted(pooled.lengths) == [1.5, 1.5, 2.0, 2.0, 2.0]
    assert pool_request_acceptance([None, None]) is None
