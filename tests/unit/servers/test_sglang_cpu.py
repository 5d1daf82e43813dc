"""SGLang on a CPU: the launcher, environment, KV budget in tokens and the skips, as the adapter writes them.

That SGLang's own parser takes these flags is checked in test_sglang.py (every committed SGLang server, the
default's CPU servers among them); that the server really serves with them, in tests/integration/test_sglang_cpu.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.plan import ServerConfig, expand
from harness.plan.findings import model_facts
from harness.servers import get_runtime
from harness.servers.sglang import SglangRuntime
from harness.servers.sglang_cpu import (
    CPU_LAUNCHER,
    FALLBACK_KV_TOKENS,
    cpu_findings,
    kv_bytes_per_token,
    kv_cache_tokens,
)

MATRIX = """
name: s
hardware: {{kind: cpu, kv_cache_gib: 0.5}}
models:
  m: {{id: "fixture:tiny-qwen3-moe", family: qwen3, checkpoints: {{int8: /ckpt/int8}}}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4}}
runtimes: {{sglang: {{python: /opt/sglang/bin/python}}}}
axes:
  runtime: [sglang]
  {axes}
"""
QWEN3_MOE = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
             "hidden_size": 128}


def servers(write_matrix: Callable[..., Path], axes: str = "concurrency: [1]") -> dict[str, ServerConfig]:
    return {g.server.label: g.server for g in expand(load_matrix(write_matrix(MATRIX.format(axes=axes)))).groups}


def test_kv_bytes_per_token_for_gqa_and_mla() -> None:
    assert kv_bytes_per_token(QWEN3_MOE) == 2 * 2 * 2 * 2 * 32  # K and V, bf16, 2 layers x 2 KV heads x 32
    no_head_dim = {k: v for k, v in QWEN3_MOE.items() if k != "head_dim"}
    assert kv_bytes_per_token(no_head_dim) == kv_bytes_per_token(QWEN3_MOE)  # 128 / 4 heads = 32
    mla = {"num_hidden_layers": 3, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "num_attention_heads": 4}
    assert kv_bytes_per_token(mla) == 2 * 3 * (64 + 16)


def test_kv_budget_is_vllms_bytes_in_tokens(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE))
    assert kv_cache_tokens(str(tmp_path), 1.0) == 2**30 // 512
    assert kv_cache_tokens(str(tmp_path / "missing"), 1.0) == FALLBACK_KV_TOKENS


def test_cpu_launch_uses_the_launcher_and_sglangs_cpu_platform(write_matrix: Callable[..., Path],
                                                               tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE))
    server = servers(write_matrix)["m/sglang/bf16/tp1/off"]
    spec = SglangRuntime().launch_spec(server, str(tmp_path), 8123)
    argv = list(spec.argv)
    assert argv[:3] == ["/opt/sglang/bin/python", "-m", CPU_LAUNCHER]
    assert argv[argv.index("--max-total-tokens") + 1] == str(2**29 // 512)  # kv_cache_gib 0.5
    assert argv[argv.index("--attention-backend") + 1] == "intel_amx"
    assert {"--disable-cuda-graph", "--disable-overlap-schedule", "--sleep-on-idle"} <= set(argv)
    assert argv[argv.index("--device") + 1] == "cpu"
    assert spec.env["SGLANG_USE_CPU_ENGINE"] == "1" and "SGLANG_CPU_OMP_THREADS_BIND" not in spec.env


def test_two_ranks_get_a_core_each(write_matrix: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.servers.sglang_cpu.usable_cores", lambda: [0, 1])
    server = servers(write_matrix, "parallel: [{tp: 2}]\n  concurrency: [1]")["m/sglang/bf16/tp2/off"]
    assert SglangRuntime().engine_env(server)["SGLANG_CPU_OMP_THREADS_BIND"] == "0|1"


def test_what_the_stand_in_cannot_run_is_skipped(write_matrix: Callable[..., Path]) -> None:
    axes = ('precision: [bf16, bf16-kvfp8, int8]\n  speculation: ["off", {method: ngram, k: 3}, '
            '{method: eagle3, k: 3, draft_model: /ckpt/eagle3}]\n  concurrency: [1]')
    found = {label: {f.rule for f in cpu_findings(server)} for label, server in servers(write_matrix, axes).items()}
    assert found["m/sglang/bf16/tp1/off"] == set() and found["m/sglang/bf16/tp1/ngram3"] == set()
    assert found["m/sglang/bf16/tp1/eagle3k3"] == {"sglang-cpu-speculation"}
    assert found["m/sglang/int8/tp1/off"] == {"sglang-cpu-weights"}
    assert found["m/sglang/bf16-kvfp8/tp1/off"] == {"sglang-cpu-kv-fp8"}
    server = servers(write_matrix, axes)["m/sglang/int8/tp1/eagle3k3"]
    assert {f.rule for f in SglangRuntime().findings(server, model_facts(server))} >= {
        "sglang-cpu-speculation", "sglang-cpu-weights"}


def test_only_sglang_declares_a_cpu_caveat() -> None:
    assert "not SGLang's kernels" in (get_runtime("sglang").cpu_caveat or "")
    assert get_runtime("vllm").cpu_caveat is None


def test_expert_parallel_and_disaggregated_sglang_are_skipped_on_cpu(write_matrix: Callable[..., Path]) -> None:
    axes = ('parallel: [{tp: 2}, {tp: 2, ep: 2}]\n  topology: [colocated, {replicas: 2}, {prefill: 1, decode: 1}]'
            '\n  concurrency: [1]')
    found = {label: {f.rule for f in cpu_findings(server)} for label, server in servers(write_matrix, axes).items()}
    assert found == {
        "m/sglang/bf16/tp2/off": set(), "m/sglang/bf16/tp2/off/r2": set(),  # TP and routed replicas serve
        "m/sglang/bf16/tp2/off/1p1d": {"sglang-cpu-pd"},
        "m/sglang/bf16/tp2-ep2/off": {"sglang-cpu-ep"}, "m/sglang/bf16/tp2-ep2/off/r2": {"sglang-cpu-ep"},
        "m/sglang/bf16/tp2-ep2/off/1p1d": {"sglang-cpu-ep", "sglang-cpu-pd"}}
