"""Recipe rules at plan time: each a ConfigError naming file, key and fix, or a skip that `harness plan` lists."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.host import cpu_has_amx
from harness.pipeline import load_plan
from harness.plan import Plan, expand
from harness.plan.findings import model_facts
from harness.plan.rules import findings
from harness.report import render_plan
from harness.servers import get_runtime

GPU = """
name: r
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
models:
  ds: {id: deepseek-ai/DeepSeek-V3.1, routed_experts: 256, num_nextn_predict_layers: 1}
  qw: {id: Qwen/Qwen3-235B-A22B, routed_experts: 128, num_nextn_predict_layers: 0}
workloads:
  w: {kind: random, input_tokens: 64, output_tokens: 64}
axes:
  model: [ds, qw]
  parallel: [{tp: 8, ep: 8}]
  speculation: ["off", {method: mtp, k: 2}]
"""


def vetted(write_matrix: Callable[..., Path], text: str) -> Plan:
    return load_plan(write_matrix(text))


def error(write_matrix: Callable[..., Path], text: str) -> ConfigError:
    path = write_matrix(text)
    with pytest.raises(ConfigError) as info:
        vetted(write_matrix, text)
    assert str(path) in str(info.value) and info.value.fix
    return info.value


def test_mtp_without_layers_is_an_error_naming_the_exclude(write_matrix: Callable[..., Path]) -> None:
    err = error(write_matrix, GPU)
    assert err.key == "models.qw" and "num_nextn_predict_layers = 0" in err.problem
    assert "exclude {model: qw, speculation: mtp}" in err.fix and "unsupported: skip" in err.fix


def test_unsupported_skip_drops_and_lists(write_matrix: Callable[..., Path]) -> None:
    plan = vetted(write_matrix, GPU + "unsupported: skip\n")
    assert [g.server.label for g in plan.groups] == ["ds/vllm/bf16/tp8-ep8/off", "ds/vllm/bf16/tp8-ep8/mtp2",
                                                      "qw/vllm/bf16/tp8-ep8/off"]
    assert [s.server.label for s in plan.skipped] == ["qw/vllm/bf16/tp8-ep8/mtp2"]
    text = render_plan(plan)
    assert "skipped by the recipe rules (1 cells on 1 servers" in text and "has no MTP layer" in text


def test_ep_must_divide_the_routed_experts(write_matrix: Callable[..., Path]) -> None:
    text = GPU.replace("routed_experts: 128", "routed_experts: 60").replace("mtp, k: 2", "ngram, k: 2")
    err = error(write_matrix, text)
    assert "does not divide the 60 routed experts" in err.problem and "use ep in [1, 2, 4]" in err.fix


def test_ep_must_divide_the_ranks(write_matrix: Callable[..., Path]) -> None:
    text = GPU.replace("{tp: 8, ep: 8}", "{tp: 2, dp: 3, ep: 4}").replace("gpus_per_replica: 8", "gpus_per_replica: 6")
    assert "does not divide the 6 ranks" in error(write_matrix, text).problem


def test_tp_times_dp_must_fit_the_replica(write_matrix: Callable[..., Path]) -> None:
    err = error(write_matrix, GPU.replace("{tp: 8, ep: 8}", "{tp: 8, dp: 2, ep: 16}"))
    assert err.key.startswith("axes.parallel") and "16 ranks, but a replica has 8 GPUs" in err.problem


def test_fp4_needs_blackwell(write_matrix: Callable[..., Path]) -> None:
    text = GPU.replace("B200", "H100") + "  precision: [fp4]\n"
    text = text.replace("num_nextn_predict_layers: 0}", "num_nextn_predict_layers: 0, checkpoints: {fp4: x/y}}")
    text = text.replace("routed_experts: 256, num_nextn_predict_layers: 1}",
                        "routed_experts: 256, num_nextn_predict_layers: 1, checkpoints: {fp4: x/z}}")
    err = error(write_matrix, text)
    assert err.key == "axes.precision (fp4)" and "Blackwell" in err.problem and "H100" in err.problem


def test_eagle3_needs_a_draft_model(write_matrix: Callable[..., Path]) -> None:
    path = write_matrix(GPU.replace("{method: mtp, k: 2}", "{method: eagle3, k: 3}"))
    with pytest.raises(ConfigError, match="draft_model"):
        load_matrix(path)


def test_facts_from_a_local_config_and_overrides(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    model = tmp_path / "moe"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"num_experts": 64, "kv_lora_rank": 512}))
    text = GPU.replace("deepseek-ai/DeepSeek-V3.1, routed_experts: 256, num_nextn_predict_layers: 1", str(model))
    server = expand(load_matrix(write_matrix(text))).groups[0].server
    facts = model_facts(server)
    assert (facts.routed_experts, facts.nextn_layers, facts.mla) == (64, 0, True)
    unknown = GPU.replace(", routed_experts: 256, num_nextn_predict_layers: 1", "")
    server = expand(load_matrix(write_matrix(unknown, "u.yaml"))).groups[1].server  # ds, mtp2
    notes = [f for f in findings(server, get_runtime(server.runtime)) if f.outcome == "note"]
    assert {f.rule for f in notes} >= {"ep-experts", "mtp-layers"}
    assert any("not local" in f.problem and "routed_experts" in f.fix for f in notes)


CPU = """
name: c
models:
  ds: {id: "fixture:tiny-deepseek-v3"}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8}
axes:
  precision: [bf16, bf16-kvfp8, fp8]
"""


def test_what_the_cpu_build_cannot_do(write_matrix: Callable[..., Path], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # The fixture's config as built: MLA (kv_lora_rank) with one MTP layer.
    root = tmp_path / "fixtures"
    (root / "tiny-deepseek-v3").mkdir(parents=True)
    (root / "tiny-deepseek-v3" / "config.json").write_text(
        json.dumps({"n_routed_experts": 8, "num_nextn_predict_layers": 1, "kv_lora_rank": 512}))
    monkeypatch.setenv("HARNESS_FIXTURES_DIR", str(root))
    plan = vetted(write_matrix, CPU + "  speculation: [off, mtp]\nunsupported: skip\n")
    reasons = {s.server.precision.label: s.reasons for s in plan.skipped}
    assert any("MLA on the CPU has no fp8 KV cache" in r for r in reasons["bf16-kvfp8"])
    assert any("static_scaled_fp8_quant" in r for r in reasons["fp8"])
    with pytest.raises(ConfigError, match="fp8"):
        vetted(write_matrix, CPU.replace("[bf16, bf16-kvfp8, fp8]", "[fp8]"))


@pytest.mark.usefixtures("host")
def test_mla_without_amx_is_noted_on_such_a_cpu_only(write_matrix: Callable[..., Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM forces chunked prefill and prefix caching off for MLA where the CPU has no AMX: a note that depends on
    the machine, so it is checked as each identity (tests/support/hosts.py: the Intel one has AMX)."""
    root = tmp_path / "fixtures"
    (root / "tiny-deepseek-v3").mkdir(parents=True)
    (root / "tiny-deepseek-v3" / "config.json").write_text(json.dumps({"n_routed_experts": 8, "kv_lora_rank": 512}))
    monkeypatch.setenv("HARNESS_FIXTURES_DIR", str(root))
    text = CPU.replace("[bf16, bf16-kvfp8, fp8]", "[bf16]") + "server: {chunked_prefill: 512}\n"
    server = expand(load_matrix(write_matrix(text))).groups[0].server
    rules = {f.rule for f in findings(server, get_runtime(server.runtime)) if f.outcome == "note"}
    assert ("vllm-cpu-mla-amx" in rules) == (not cpu_has_amx())


DS_ONLY = GPU.replace("  model: [ds, qw]", "  model: [ds]")


def test_a_deployment_must_fit_one_machine(write_matrix: Callable[..., Path]) -> None:
    text = DS_ONLY.replace("gpus_per_replica: 8}", "gpus_per_replica: 8, gpus_per_node: 8}") + \
        "  topology: [{prefill: 1, decode: 1}]\n"
    err = error(write_matrix, text)
    assert err.key.startswith("axes.topology") and "2 servers x 8 GPUs = 16 GPUs" in err.problem


def test_a_missing_router_fails_at_plan_time(write_matrix: Callable[..., Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.plan.rules as rules

    real = rules.importlib.util.find_spec
    monkeypatch.setattr(rules.importlib.util, "find_spec", lambda name: None if name == "vllm_router" else real(name))
    err = error(write_matrix, DS_ONLY + "  topology: [{replicas: 2}]\n")
    assert "router (vllm-router) is not installed" in err.problem and "pip install vllm-router" in err.fix


@pytest.mark.parametrize(("runtime", "connector", "problem"), [
    ("vllm", "P2pNcclConnector", "vLLM has no KV connector 'P2pNcclConnector'"),
    ("sglang", "fake", "decode-only"),
])
def test_a_transfer_the_engine_lacks_fails_at_plan_time(write_matrix: Callable[..., Path], runtime: str,
                                                        connector: str, problem: str) -> None:
    text = DS_ONLY.replace("  parallel:", f"  runtime: [{runtime}]\n  parallel:") + \
        f"  topology: [{{prefill: 1, decode: 1, connector: {connector}}}]\n" + \
        "runtimes: {sglang: {python: /opt/sglang/bin/python}}\n"
    assert problem in error(write_matrix, text).problem
