"""The AIConfigurator mapping: which bundled config, system, quant modes, layout, batch and speculation a cell becomes,
and why a cell it cannot map gets no prediction. Pure: aiconfigurator is never imported here."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from harness.config.hardware import CpuHardware, GpuHardware
from harness.config.matrix import ModelSpec, load_matrix
from harness.config.parallel import Parallel
from harness.config.precision import Precision
from harness.config.predict import PredictSpec
from harness.config.server import RuntimeEnv
from harness.config.speculation import Speculation
from harness.config.topology import Topology
from harness.config.workloads import ToolCallsWorkload
from harness.plan import Cell, Plan, expand
from harness.predict.aiconfigurator_inputs import AicInputs, default_accepted, map_inputs, pinned_version

MATRICES = Path(__file__).resolve().parents[3] / "matrices"
NO_SPEC = PredictSpec()


@functools.cache
def _plan(name: str) -> Plan:
    return expand(load_matrix(MATRICES / name))


def _cell(matrix: str, **selector: Any) -> Cell:
    return next(cell for cell in _plan(matrix).cells if cell.matches(selector))


def _ds(**selector: Any) -> Cell:
    """A cell of the DeepSeek-V3.1 16x B200 matrix (SGLang, FP8, TP2 x EP8, no speculation, c64 unless said)."""
    chosen = {"runtime": "sglang", "precision": "fp8", "parallel": "tp2-dp8-ep8", "speculation": "off",
              "concurrency": 64} | selector
    return _cell("deepseek-v31-b200.yaml", **chosen)


def _qwen(**selector: Any) -> Cell:
    chosen = {"runtime": "sglang", "precision": "fp8", "speculation": "off", "workload": "chat-1k1k",
              "concurrency": 64} | selector
    return _cell("qwen3-235b-b200.yaml", **chosen)


def _with(cell: Cell, **server: Any) -> Cell:
    return cell.model_copy(update={"server": cell.server.model_copy(update=server)})


def _map(cell: Cell, spec: PredictSpec = NO_SPEC) -> AicInputs:
    inputs = map_inputs(cell.server, cell, spec)
    assert isinstance(inputs, AicInputs), inputs
    return inputs


def _reason(cell: Cell, spec: PredictSpec = NO_SPEC) -> str:
    reason = map_inputs(cell.server, cell, spec)
    assert isinstance(reason, str), reason
    return reason


def test_deepseek_fp8_is_deepseek_v3s_config_with_block_fp8_and_the_matrix_layout() -> None:
    inputs = _map(_ds())
    assert (inputs.model_path, inputs.system, inputs.backend, inputs.backend_version) == \
        ("deepseek-ai/DeepSeek-V3", "b200_sxm", "sglang", "0.5.14")
    assert (inputs.gemm_quant, inputs.moe_quant, inputs.kv_quant, inputs.fmha_quant) == \
        ("fp8_block", "fp8_block", "bfloat16", "bfloat16")
    # the matrix's comment: attention TP 2 in 8 DP groups (16 ranks), experts over EP 8, so MoE TP 16 / 8 = 2
    assert (inputs.tp_size, inputs.attention_dp_size, inputs.moe_tp_size, inputs.moe_ep_size) == (2, 8, 2, 8)
    assert (inputs.isl, inputs.osl, inputs.batch_size, inputs.nextn, inputs.prefill_workers) == (1024, 1024, 8, 0, 0)
    said = dict(inputs.assumptions)
    assert "DeepSeek-V3 stands in for deepseek-ai/DeepSeek-V3.1" in said["model config"]
    assert "auto taken as bfloat16" in said["kv cache"]
    assert "across nodes" in said["nodes"]  # 16 GPUs on 8-GPU b200_sxm nodes
    assert inputs.data_version == "sglang 0.5.14 tables on b200_sxm; the matrix pins 0.5.23"
    assert said["data version"] == "tables measured on sglang 0.5.14; the matrix runs 0.5.23"


def test_deepseek_fp4_is_nvidias_nvfp4_checkpoint_with_its_fp8_kv_cache() -> None:
    inputs = _map(_ds(precision="fp4"))
    assert inputs.model_path == "nvidia/DeepSeek-V3.1-NVFP4"
    assert (inputs.gemm_quant, inputs.moe_quant, inputs.kv_quant) == ("nvfp4", "nvfp4", "fp8")
    assert "model config" not in dict(inputs.assumptions)  # the matrix's fp4 checkpoint is the bundled one


def test_an_explicit_kv_cache_dtype_wins_over_auto() -> None:
    fp8_kv = _map(_with(_ds(), precision=Precision.model_validate("fp8-kvfp8")))
    assert fp8_kv.kv_quant == "fp8" and "kv cache" not in dict(fp8_kv.assumptions)
    bf16_kv = _map(_with(_ds(precision="fp4"), precision=Precision.model_validate("fp4-kvbf16")))
    assert bf16_kv.kv_quant == "bfloat16"


def test_ep16_puts_one_expert_shard_per_rank() -> None:
    inputs = _map(_ds(parallel="tp2-dp8-ep16"))
    assert (inputs.moe_tp_size, inputs.moe_ep_size) == (1, 16)


def test_vllm_cells_use_the_vllm_tables() -> None:
    inputs = _map(_ds(runtime="vllm", parallel="tp2-dp8-ep16"))
    assert (inputs.backend, inputs.backend_version) == ("vllm", "0.24.0")
    assert inputs.data_version == "vllm 0.24.0 tables on b200_sxm; the matrix pins 0.33.0"


@pytest.mark.parametrize(("precision", "config", "quant", "kv"), [
    ("bf16", "Qwen/Qwen3-235B-A22B", "bfloat16", "bfloat16"),
    ("fp8", "Qwen/Qwen3-235B-A22B-FP8", "fp8_block", "bfloat16"),
    ("fp4", "nvidia/Qwen3-235B-A22B-NVFP4", "nvfp4", "fp8"),
])
def test_qwen3_235b_maps_by_precision(precision: str, config: str, quant: str, kv: str) -> None:
    cell = _with(_qwen(), precision=Precision.model_validate(precision))
    inputs = _map(cell)
    assert (inputs.model_path, inputs.gemm_quant, inputs.moe_quant, inputs.kv_quant) == (config, quant, quant, kv)
    assert (inputs.tp_size, inputs.attention_dp_size, inputs.moe_tp_size, inputs.moe_ep_size) == (8, 1, 1, 8)
    assert inputs.batch_size == 64


def test_a_checkpoint_other_than_the_bundled_one_is_stated() -> None:
    said = dict(_map(_qwen(precision="fp4")).assumptions)
    assert said["model config"] == ("nvidia/Qwen3-235B-A22B-NVFP4 stands in for nvidia/Qwen3-235B-A22B-FP4 (same "
                                    "architecture, fp4 weights)")


def test_gb200_holds_the_16_gpus_in_one_nvlink_domain() -> None:
    inputs = _map(_with(_ds(), hardware=GpuHardware(gpu="GB200", gpus_per_replica=16)))
    assert inputs.system == "gb200" and "nodes" not in dict(inputs.assumptions)


@pytest.mark.parametrize(("concurrency", "batch", "rounded"), [(64, 8, False), (100, 13, True), (4, 1, True)])
def test_batch_is_per_attention_dp_rank(concurrency: int, batch: int, rounded: bool) -> None:
    inputs = _map(_ds().model_copy(update={"concurrency": concurrency}))
    assert inputs.batch_size == batch
    assert ("rounded" in dict(inputs.assumptions)["batch"]) is rounded


def test_replicas_split_the_users() -> None:
    cell = _with(_qwen(concurrency=128), topology=Topology.model_validate({"replicas": 2}))
    inputs = _map(cell)
    assert inputs.batch_size == 64 and inputs.prefill_workers == 0
    assert "one replica's" in dict(inputs.assumptions)["replicas"]


@pytest.mark.parametrize(("k", "accepted"), [(1, 0.85), (2, 1.38), (3, 1.7)])
def test_mtp_is_nextn_with_the_default_acceptance(k: int, accepted: float) -> None:
    inputs = _map(_ds(speculation=f"mtp{k}"))
    assert (inputs.nextn, inputs.nextn_accepted) == (k, accepted) == (k, default_accepted(k))
    assert "default" in dict(inputs.assumptions)["acceptance"]


def test_the_matrixs_accepted_tokens_win_over_the_default() -> None:
    inputs = _map(_ds(speculation="mtp3"), PredictSpec(accepted_tokens={3: 2.1}))
    assert inputs.nextn_accepted == 2.1
    assert "the matrix's predict.accepted_tokens" in dict(inputs.assumptions)["acceptance"]


def test_eagle3_is_an_mtp_proxy_and_says_so() -> None:
    inputs = _map(_qwen(speculation="eagle3k3"))
    assert (inputs.nextn, inputs.nextn_accepted) == (3, 1.7)
    assert dict(inputs.assumptions)["speculation"] == "EAGLE-3 modelled as MTP nextn (proxy)"


def test_prefill_decode_split_is_aiconfigurators_disaggregated_mode() -> None:
    cell = _cell("deepseek-v31-b200-pd.yaml", topology="1p2d", workload="chat-1k1k", concurrency=128)
    inputs = _map(cell)
    assert (inputs.prefill_workers, inputs.decode_workers, inputs.batch_size) == (1, 2, 64)
    kwargs = inputs.estimate_kwargs()
    assert kwargs["mode"] == "disagg" and kwargs["prefill_batch_size"] == 1
    assert (kwargs["prefill_num_workers"], kwargs["decode_num_workers"], kwargs["decode_batch_size"]) == (1, 2, 64)
    assert "24 GPUs" in dict(inputs.assumptions)["disaggregated"]


def _nvl72(**selector: Any) -> Cell:
    """A cell of the DeepSeek-V3.1 GB200 NVL72 matrix (SGLang, FP4, TP2 x DP8 x EP8, MTP k=3, 1P1D, c64 unless said)."""
    chosen = {"precision": "fp4", "parallel": "tp2-dp8-ep8", "speculation": "mtp3", "topology": "1p1d",
              "concurrency": 64} | selector
    return _cell("deepseek-v31-nvl72.yaml", **chosen)


def test_an_nvl72_prefill_decode_cell_keeps_its_moe_inside_a_gb200_tray_and_says_so() -> None:
    # AIConfigurator's disaggregated mode refuses EP 8 x MoE TP 2 on gb200 (4 GPUs a node): cross-node EP is DeepEP
    # with pure EP only. The widest EP inside a tray, 4, with MoE TP 4 making up the 16 ranks, is what it prices.
    inputs = _map(_nvl72())
    assert (inputs.system, inputs.prefill_workers, inputs.decode_workers) == ("gb200", 1, 1)
    assert (inputs.tp_size, inputs.attention_dp_size, inputs.moe_tp_size, inputs.moe_ep_size) == (2, 8, 4, 4)
    assert inputs.batch_size == 8  # c64 over the decode worker's 8 attention-DP ranks
    said = dict(inputs.assumptions)
    assert said["moe layout"] == (
        "P/D workers' MoE modelled as EP 4 x MoE TP 4, not the matrix's EP 8 x MoE TP 2: AIConfigurator 0.12.0's "
        "disaggregated mode takes EP beyond one gb200 node (4 GPUs) for DeepEP all-to-all, which needs MoE TP 1 and "
        "WideEP tables, and this server sets no DeepEP moe_a2a_backend (the regular MoE path); EP 4 is the widest "
        "inside a node, on the regular MoE path the colocated estimate prices. Every P/D cell with EP above 4 gets "
        "this layout")
    assert "experts over EP 8 with MoE TP 2" in said["parallel"]  # the matrix's own layout is still stated
    kwargs = inputs.estimate_kwargs()
    assert (kwargs["mode"], kwargs["moe_tp_size"], kwargs["moe_ep_size"]) == ("disagg", 4, 4)


def test_nvl72_prefill_decode_at_ep16_lands_on_the_same_layout() -> None:
    ep8, ep16 = _map(_nvl72(precision="fp8")), _map(_nvl72(precision="fp8", parallel="tp2-dp8-ep16"))
    assert (ep16.moe_tp_size, ep16.moe_ep_size) == (ep8.moe_tp_size, ep8.moe_ep_size) == (4, 4)
    assert "not the matrix's EP 16 x MoE TP 1" in dict(ep16.assumptions)["moe layout"]


def test_colocated_nvl72_cells_keep_the_matrix_layout() -> None:
    inputs = _map(_nvl72(topology="colocated", parallel="tp2-dp8-ep16"))
    assert (inputs.moe_tp_size, inputs.moe_ep_size, inputs.prefill_workers) == (1, 16, 0)
    assert "moe layout" not in dict(inputs.assumptions)


def test_prefill_decode_with_ep_inside_an_hgx_node_keeps_the_matrix_layout() -> None:
    inputs = _map(_cell("deepseek-v31-b200-pd.yaml", topology="1p1d", workload="chat-1k1k", concurrency=64))
    assert (inputs.system, inputs.moe_tp_size, inputs.moe_ep_size, inputs.prefill_workers) == ("b200_sxm", 1, 8, 1)
    assert "moe layout" not in dict(inputs.assumptions)


def test_prefill_decode_with_deepep_and_pure_ep_is_asked_as_it_runs() -> None:
    cell = _nvl72(parallel="tp2-dp8-ep16")
    cell = _with(cell, runtime_env=cell.server.runtime_env.model_copy(update={"moe_a2a_backend": "deepep"}))
    inputs = _map(cell)
    assert (inputs.moe_tp_size, inputs.moe_ep_size) == (1, 16)  # DeepEP: AIConfigurator prices it or says why not
    assert "moe layout" not in dict(inputs.assumptions)


def test_every_quant_mode_and_the_data_version_are_explicit() -> None:
    kwargs = _map(_ds()).estimate_kwargs()
    for key in ("gemm_quant_mode", "moe_quant_mode", "kvcache_quant_mode", "fmha_quant_mode", "backend_version"):
        assert kwargs[key]
    assert kwargs["database_mode"] == "SILICON" and "mode" not in kwargs  # aggregated is cli_estimate's default


def test_assumptions_name_quant_routing_and_layout() -> None:
    said = dict(_map(_ds(speculation="mtp3")).assumptions)
    assert {"quant", "moe routing", "parallel", "batch", "acceptance", "kv cache"} <= set(said)
    routed = dict(_map(_ds(), PredictSpec(moe_routing="balanced")).assumptions)
    assert routed["moe routing"] == "balanced"


@pytest.mark.parametrize(("where", "pinned"), [
    ({"python": "/opt/venvs/sglang-0.5.23/bin/python"}, "0.5.23"),
    ({"image": "lmsysorg/sglang:v0.5.24rc1@sha256:" + "a" * 64}, "0.5.24rc1"),
    ({"image": "lmsysorg/sglang@sha256:" + "0123456789" * 6 + "abcd"}, "unpinned"),
    ({}, "unpinned"),
])
def test_the_pinned_engine_version_comes_from_the_interpreter_or_image(where: dict[str, str], pinned: str) -> None:
    assert pinned_version(_ds().server.model_copy(update={"runtime_env": RuntimeEnv(**where)})) == pinned


def test_an_unpinned_runtime_says_so() -> None:
    inputs = _map(_with(_ds(), runtime_env=RuntimeEnv()))
    assert inputs.data_version.endswith("the matrix pins unpinned")


# Every NoPrediction reason


def test_a_precision_without_a_bundled_config() -> None:
    cell = _with(_ds(), precision=Precision.model_validate("bf16"))
    assert _reason(cell) == "no bundled config for deepseek-ai/DeepSeek-V3.1 at bf16; bundled: fp8, fp4"


def test_fp4_on_hopper() -> None:
    reason = _reason(_with(_ds(precision="fp4"), hardware=GpuHardware(gpu="H200", gpus_per_replica=16)))
    assert reason.startswith("FP4 (NVFP4) needs Blackwell; H200")


def test_a_runtime_without_tables() -> None:
    assert "no tables for runtime 'trtllm'" in _reason(_with(_ds(), runtime="trtllm"))


def test_cpu_hardware() -> None:
    assert _reason(_with(_ds(), hardware=CpuHardware())) == "AIConfigurator models GPUs only"


def test_a_workload_without_known_lengths() -> None:
    cell = _ds().model_copy(update={"workload_name": "tools", "workload": ToolCallsWorkload()})
    assert _reason(cell).startswith("workload 'tools' has no mean prompt/output lengths")


@pytest.mark.parametrize("method", [{"method": "ngram", "k": 3}, {"method": "suffix"},
                                    {"method": "draft_model", "k": 3, "draft_model": "Qwen/Qwen3-0.6B"}])
def test_speculation_without_a_model(method: dict[str, Any]) -> None:
    cell = _with(_qwen(), speculation=Speculation.model_validate(method))
    assert f"{method['method']} speculation is not modelled" in _reason(cell)


def test_a_draft_tree() -> None:
    tree = Speculation.model_validate({"method": "mtp", "k": 3, "top_k": 2, "draft_tokens": 6})
    assert "tree drafting" in _reason(_with(_ds(), speculation=tree))


def test_ep_that_does_not_divide_the_ranks() -> None:
    cell = _with(_ds(), parallel=Parallel(tp=2, dp=3, ep=4), hardware=GpuHardware(gpu="B200", gpus_per_replica=6))
    assert _reason(cell) == "ep=4 does not divide the 6 ranks, so MoE TP (ranks / ep) is not whole"


def test_a_layout_that_does_not_fill_the_replica() -> None:
    cell = _with(_ds(), hardware=GpuHardware(gpu="B200", gpus_per_replica=8))
    assert _reason(cell) == "tp x dp = 16 ranks but gpus_per_replica is 8"


def test_a_prefill_decode_split_larger_than_the_machine() -> None:
    cell = _cell("deepseek-v31-b200-pd.yaml", topology="1p2d", workload="chat-1k1k", concurrency=32)
    cell = _with(cell, topology=Topology.model_validate({"prefill": 2, "decode": 2}))
    assert "2P2D of 8-GPU servers needs 32 GPUs, more than the 24 one machine holds" in _reason(cell)


def test_a_prefill_decode_split_larger_than_an_nvl72_rack() -> None:
    cell = _with(_ds(), hardware=GpuHardware(gpu="GB200", gpus_per_replica=16),
                 topology=Topology.model_validate({"prefill": 2, "decode": 3}))
    assert "needs 80 GPUs, more than the 72 one rack holds" in _reason(cell)


def test_a_routing_without_tables() -> None:
    assert "moe_routing 'zipf'" in _reason(_ds(), PredictSpec(moe_routing="zipf"))


@pytest.mark.parametrize(("runtime", "moe"), [("sglang", "w4a8_mxfp4_mxfp8_trtllm"), ("vllm", "w4a8_mxfp4_mxfp8")])
def test_deepseek_v4_pro_maps_its_native_fp4_experts_per_engine(runtime: str, moe: str) -> None:
    model = ModelSpec(id="deepseek-ai/DeepSeek-V4-Pro", checkpoints={"mxfp4": "deepseek-ai/DeepSeek-V4-Pro"})
    cell = _with(_ds(), model=model, precision=Precision.model_validate("mxfp4"), runtime=runtime)
    inputs = _map(cell)
    assert (inputs.model_path, inputs.gemm_quant, inputs.moe_quant, inputs.kv_quant) == \
        ("deepseek-ai/DeepSeek-V4-Pro", "fp8_block", moe, "fp8")


def test_a_measured_routing_replaces_the_default_and_says_where_it_came_from(tmp_path: Path) -> None:
    from harness.servers.expert_load_collectors import ExpertCounts
    from harness.telemetry import ExpertLoadRecord

    loads = (tuple(range(1, 65)), tuple(64 - i for i in range(64)))  # near-uniform over 1..64: alpha near 0
    counts = ExpertCounts(collector="c", layers=(3, 4), experts=64, top_k=8, counts=loads, rows=(260, 260))
    (tmp_path / "runs" / "cell").mkdir(parents=True)
    (tmp_path / "runs" / "cell" / "expert_load.json").write_text(ExpertLoadRecord(
        label="cell", counts=counts, expected_rows=260, requests=4, measured_s=1.0).model_dump_json())
    inputs = _map(_ds(), PredictSpec(routing_from=str(tmp_path)))
    said = dict(inputs.assumptions)["moe routing"]
    assert inputs.moe_routing == "balanced" and said.startswith(f"balanced: measured in {tmp_path}")
    assert "128 expert loads" in said and "interval" in said
    assert "no expert load is stored under" in _reason(_ds(), PredictSpec(routing_from=str(tmp_path / "none")))
    with pytest.raises(ValueError, match="keep one"):
        PredictSpec(routing_from=str(tmp_path), moe_routing="balanced")
