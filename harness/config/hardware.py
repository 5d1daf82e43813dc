"""The machine a matrix runs on (``hardware:``), what it costs (``cost:``) and the priors of the run-time estimate
``harness plan`` prints for it (``estimate:``).

``hardware`` is a CPU machine or GPUs told apart by ``kind``; the engines' adapters turn it into flags, the cost table
(``harness.analysis.cost``) prices it and the estimate (``harness.analysis.estimate``) takes its defaults from its
kind. Prices, power and priors are inputs the report states, never measurements.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from harness.config.strict_model import StrictModel


class CpuHardware(StrictModel):
    kind: Literal["cpu"] = "cpu"
    kv_cache_gib: float = Field(1.0, gt=0, description="KV cache reserved per server (vLLM --kv-cache-memory-bytes)")
    threads: int | None = Field(None, gt=0, description="OMP threads for the engine; default: all cores")


class GpuHardware(StrictModel):
    _added_later = frozenset({"gpus_per_node"})

    kind: Literal["gpu"] = "gpu"
    gpu: str = Field(description="accelerator name as the cost table knows it, e.g. H100, H200, B200, GB200")
    gpus_per_replica: int = Field(1, gt=0, description="GPUs one server replica spans (TP x DP)")
    memory_utilization: float = Field(0.9, gt=0, le=1, description="fraction of GPU memory the engine may take")
    gpus_per_node: int | None = Field(None, gt=0, description="GPUs one machine holds: a deployment's servers "
                                      "(axes.topology) must fit on one")


Hardware = Annotated[CpuHardware | GpuHardware, Field(discriminator="kind")]


class CostSpec(StrictModel):
    """Overrides of the cost table (``harness.analysis.cost``): prices and power are inputs, stated in the report."""

    file: str | None = Field(None, description="YAML price table merged over the built-in one (same shape); "
                              "a relative path is taken from the working directory")
    usd_per_hour: float | None = Field(None, gt=0, description="price of one device of this matrix's hardware "
                                       "(one GPU, or the whole CPU machine), $/hour")
    watts_all_in: float | None = Field(None, gt=0, description="all-in power of one such device, W")
    source: str | None = Field(None, description="where the overriding figures come from (shown in the report)")


class EstimateSpec(StrictModel):
    """Priors for the run-time and cost estimate ``harness plan`` prints: assumptions, never measurements.

    Unset values take the defaults for the hardware kind (``harness.analysis.estimate``); the plan prints every value it
    used, so an estimate can always be traced to its inputs.
    """

    _added_later = frozenset({"max_machine_hours"})

    tok_s_per_user: float | None = Field(None, gt=0, description="output tokens/s one request streams at "
                                         "(1000 / TPOT ms), before the replica saturates")
    tok_s_per_replica: float | None = Field(None, gt=0, description="most output tokens/s one replica serves")
    ttft_s: float | None = Field(None, ge=0, description="time to first token of one request")
    server_start_s: float | None = Field(None, ge=0, description="launch until ready (weights load, graphs)")
    output_tokens: int | None = Field(None, gt=0, description="output tokens of a request whose workload does "
                                      "not fix them (datasets)")
    max_machine_hours: float = Field(24.0, gt=0, description="`harness run` refuses a plan whose estimate is more "
                                     "machine-hours than this unless passed --yes (`harness plan` warns)")
