"""The fake engine's counters: vLLM's names, in a registry of each app's own, the speculative ones only when it
speculates (as a real server exposes them)."""

from __future__ import annotations

from prometheus_client import generate_latest

from harness_testing.fake_config import DEFAULT_MODEL, FakeConfig, FakeCounters


def test_the_counters_carry_vllms_names_and_the_served_model() -> None:
    counters = FakeCounters(FakeConfig(model="m"))
    counters.generation_tokens.inc(3)
    text = generate_latest(counters.registry).decode()
    assert 'vllm:generation_tokens_total{engine="0",model_name="m"} 3.0' in text
    assert "spec_decode" not in text and not counters.speculative


def test_speculation_adds_its_counters_per_draft_position() -> None:
    counters = FakeCounters(FakeConfig(speculative_k=3))
    assert counters.speculative and len(counters.accepted_per_pos) == 3
    counters.accepted_per_pos[2].inc()
    text = generate_latest(counters.registry).decode()
    labels = f'engine="0",model_name="{DEFAULT_MODEL}",position="2"'
    assert f"vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels}}} 1.0" in text


def test_two_apps_in_one_process_keep_their_own_counts() -> None:
    first, second = FakeCounters(FakeConfig()), FakeCounters(FakeConfig())
    first.prompt_tokens.inc(5)
    assert 'vllm:prompt_tokens_total{engine="0",model_name="fake-model"} 0.0' in generate_latest(
        second.registry).decode()
