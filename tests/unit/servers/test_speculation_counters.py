"""Acceptance from each engine's own counters: vLLM's per-draft counters, SGLang's verify-call counters."""

from __future__ import annotations

import pytest

from harness.config.speculation import Speculation
from harness.servers.prometheus import parse_exposition
from harness.servers.sglang import SglangRuntime
from harness.servers.vllm import VllmRuntime

# What SGLang 0.5.23's TokenizerMetricsCollector exposes (Counter names carry _total; labels as it sets them).
SGLANG = """\
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{model_name="m",is_streaming="true"}} {gen}
# HELP sglang:spec_verify_calls_total Number of speculative decoding verification calls.
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{{model_name="m"}} {verify}
# HELP sglang:spec_accept_rate Gauge of the last logging window: not a delta.
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{{model_name="m"}} 0.99
"""
SGLANG_COUNTERS = SglangRuntime.speculation_counters  # the adapters' own counter names
VLLM_COUNTERS = VllmRuntime.speculation_counters


def snap(gen: int, verify: int):  # type: ignore[no-untyped-def]
    return parse_exposition(SGLANG.format(gen=gen, verify=verify))


def test_sglang_acceptance_is_a_delta_of_its_counters() -> None:
    eagle = Speculation.model_validate({"method": "eagle3", "k": 3, "draft_model": "org/head"})
    # 1000 tokens in 400 verify calls during the cell; the lifetime totals before it must not count
    stats = SGLANG_COUNTERS.delta(snap(5000, 1000), snap(6000, 1400), eagle)
    assert stats is not None
    assert stats.acceptance_length == pytest.approx(2.5)
    assert stats.draft_tokens == 1200  # 400 verifies x (k + 1 - 1) drafted
    assert stats.accepted_tokens == 600 and stats.acceptance_rate == pytest.approx(0.5)
    assert stats.per_position == ()  # SGLang has no per-position counter: nothing is invented


def test_sglang_tree_drafts_count_every_node() -> None:
    tree = Speculation.model_validate({"method": "eagle3", "k": 3, "top_k": 4, "draft_tokens": 8,
                                       "draft_model": "org/head"})
    stats = SGLANG_COUNTERS.delta(snap(0, 0), snap(300, 100), tree)
    assert stats is not None and stats.draft_tokens == 700 and stats.acceptance_rate == pytest.approx(200 / 700)


def test_sglang_nothing_drafted_or_restarted_gives_none() -> None:
    ngram = Speculation.model_validate({"method": "ngram", "k": 3})
    assert SGLANG_COUNTERS.delta(snap(10, 5), snap(10, 5), ngram) is None
    assert SGLANG_COUNTERS.delta(snap(100, 50), snap(10, 5), ngram) is None  # went backwards
    assert SGLANG_COUNTERS.delta(snap(0, 0), snap(40, 10), ngram).draft_tokens == 30  # type: ignore[union-attr]


def test_vllm_counters_ignore_sglang_names() -> None:
    assert VLLM_COUNTERS.delta(snap(0, 0), snap(40, 10), Speculation.model_validate("ngram")) is None
