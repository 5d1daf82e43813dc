"""What AIConfigurator holds tables for: GPU names as a matrix writes them found among its systems, models found
among its bundled configs by id or family, and every other name refused with what it has instead."""

from __future__ import annotations

import pytest

from harness.config.matrix import ModelSpec
from harness.predict.aiconfigurator_tables import EP_NODE_GPUS, NODE_GPUS, SYSTEMS, Unmappable, bundled_for, system_for


@pytest.mark.parametrize(("gpu", "system"), [("B200", "b200_sxm"), ("GB200", "gb200"), ("GB200 NVL72", "gb200"),
                                             ("H100-SXM", "h100_sxm"), ("h200", "h200_sxm"), ("B300", "b300_sxm"),
                                             ("GB300", "gb300")])
def test_gpu_names_map_to_systems(gpu: str, system: str) -> None:
    assert system_for(gpu) == system


def test_a_gpu_without_tables() -> None:
    with pytest.raises(Unmappable, match="no sglang/vllm tables for GPU 'MI300X'") as refused:
        system_for("MI300X")
    assert all(name in str(refused.value) for name in SYSTEMS)  # what it has instead


def test_every_system_has_its_node_size_for_expert_parallelism() -> None:
    assert set(EP_NODE_GPUS) == set(SYSTEMS.values())
    assert EP_NODE_GPUS["gb200"] == 4 and EP_NODE_GPUS["b200_sxm"] == NODE_GPUS["b200_sxm"] == 8


def test_a_model_maps_by_the_last_part_of_its_id() -> None:
    entry = bundled_for(ModelSpec(id="deepseek-ai/DeepSeek-V3.1"))
    assert entry.name == "DeepSeek-V3.1" and set(entry.configs) == {"fp8", "fp4"}
    assert entry.kv_auto["fp4"][0] == "fp8" and entry.quant == {}


def test_a_local_path_maps_by_family() -> None:
    entry = bundled_for(ModelSpec(id="/models/dsv31", family="deepseek-v31"))
    assert entry.configs["fp8"] == "deepseek-ai/DeepSeek-V3"


def test_unknown_model() -> None:
    with pytest.raises(Unmappable, match="^no bundled config for moonshotai/Kimi-K2-Instruct;") as refused:
        bundled_for(ModelSpec(id="moonshotai/Kimi-K2-Instruct", family="qwen3"))  # qwen3 names no one size
    assert "DeepSeek-V3.1" in str(refused.value) and "Qwen3-235B-A22B" in str(refused.value)
