"""The machine a matrix runs on, told apart by ``kind``; its cost overrides and the estimate's priors are bounded
inputs."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from harness.config.hardware import CostSpec, CpuHardware, EstimateSpec, GpuHardware, Hardware

HARDWARE: TypeAdapter[CpuHardware | GpuHardware] = TypeAdapter(Hardware)


def test_kind_decides_the_model() -> None:
    gpu = HARDWARE.validate_python({"kind": "gpu", "gpu": "B200", "gpus_per_replica": 8})
    assert isinstance(gpu, GpuHardware) and (gpu.gpu, gpu.gpus_per_replica, gpu.memory_utilization) == ("B200", 8, 0.9)
    cpu = HARDWARE.validate_python({"kind": "cpu", "threads": 2})
    assert isinstance(cpu, CpuHardware) and (cpu.threads, cpu.kv_cache_gib) == (2, 1.0)
    with pytest.raises(ValidationError, match="union_tag_invalid"):
        HARDWARE.validate_python({"kind": "tpu"})
    with pytest.raises(ValidationError, match="gpu"):
        HARDWARE.validate_python({"kind": "gpu"})  # a GPU machine names its accelerator


@pytest.mark.parametrize("bad", [{"memory_utilization": 1.5}, {"gpus_per_replica": 0}, {"gpus_per_node": 0},
                                 {"threads": 4}])
def test_gpu_settings_are_bounded_and_cpu_ones_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        GpuHardware.model_validate({"gpu": "H100", **bad})


def test_a_field_added_to_the_gpu_and_the_estimate_later_stays_out_of_old_ids() -> None:
    assert GpuHardware._added_later == {"gpus_per_node"} and EstimateSpec._added_later == {"max_machine_hours"}


def test_cost_and_estimate_inputs_are_positive_and_default_unset() -> None:
    assert CostSpec() == CostSpec(file=None, usd_per_hour=None, watts_all_in=None, source=None)
    assert EstimateSpec().max_machine_hours == 24.0 and EstimateSpec().tok_s_per_user is None
    for bad in ({"usd_per_hour": 0}, {"watts_all_in": -1}):
        with pytest.raises(ValidationError):
            CostSpec.model_validate(bad)
    assert EstimateSpec(ttft_s=0).ttft_s == 0  # a prior of no wait is allowed; a negative one is not
    with pytest.raises(ValidationError):
        EstimateSpec(ttft_s=-1)
