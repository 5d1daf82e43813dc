"""The project's model of llm-d's Benchmark Report, version 0.2.1: the parts of it the harness fills, strict.

The published definition is llm-d-benchmark's pydantic ``schema_v0_2_1.py`` and its JSON Schema, committed beside
this module byte for byte (``benchmark_report_schema.json``; where it came from:
``benchmark_report_schema.source.json``). This model is a subset of it: every class is named as the published one,
forbids keys the published one does not have, and narrows each statistic's ``units`` to the ones the published
validators accept for that field (the JSON Schema alone accepts any unit anywhere). What the harness does not
measure has no field here, so an export cannot invent it. A unit test holds every class and field here to the
published JSON Schema, and validates every exported file against it.

The one extension is ``results.observability.metadata``: the published ``Observability`` is the schema's only
open block for result figures outside its vocabulary (llm-d's own converters put ad-hoc results there too), and
version 0.2 has no report-level ``metadata`` as 0.1 had. It holds the harness's own extras
(``harness.export.report_metadata``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.export.report_metadata import HarnessMetadata

BR_VERSION = "0.2.1"
BR_SCHEMA_PATH = Path(__file__).with_name("benchmark_report_schema.json")
BR_SCHEMA_SOURCE_PATH = Path(__file__).with_name("benchmark_report_schema.source.json")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- statistics, one class per unit family (the published validators' UNITS_* lists) --------------------------
class Statistics(_Strict):
    """A distribution's figures; only ``units`` and ``mean`` are required."""

    units: str
    mean: float
    stddev: float | None = Field(None, ge=0)
    min: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99p9: float | None = None
    max: float | None = None


class CountStatistics(Statistics):
    units: Literal["count"] = "count"


class TimeStatistics(Statistics):
    units: Literal["ms", "s"] = "ms"


class TokenLatencyStatistics(Statistics):
    units: Literal["ms/token", "s/token"] = "ms/token"


class TokenRateStatistics(Statistics):
    units: Literal["tokens/s"] = "tokens/s"


class RequestRateStatistics(Statistics):
    units: Literal["queries/s"] = "queries/s"


class PortionStatistics(Statistics):
    units: Literal["percent", "fraction"] = "fraction"


class PowerStatistics(Statistics):
    units: Literal["Watts"] = "Watts"


# --- run -------------------------------------------------------------------------------------------------------
class RunTime(_Strict):
    start: datetime | None = None
    end: datetime | None = None
    duration: str | None = Field(None, description="ISO-8601 duration, e.g. PT12.5S")


class Run(_Strict):
    uid: str = Field(description="unique to this report")
    eid: str | None = Field(None, description="common to every report of one experiment (the harness's run id)")
    time: RunTime | None = None
    description: str | None = None


# --- scenario: the stack -------------------------------------------------------------------------------------
class ComponentMetadata(_Strict):
    schema_version: str = "0.0.1"
    label: str
    cfg_id: str = Field(description="a hash of this component's configuration")
    description: str | None = None


class InferenceEngineParallelism(_Strict):
    tp: int = Field(1, ge=0)
    dp: int = Field(1, ge=0)
    ep: int = Field(1, ge=1)


class InferenceEngineAccelerator(_Strict):
    model: str
    count: int = Field(ge=0, description="accelerators this component uses (0: a CPU server)")
    parallelism: InferenceEngineParallelism


class InferenceEngineModel(_Strict):
    name: str


class InferenceEngine(_Strict):
    kind: Literal["inference_engine"] = "inference_engine"
    tool: str
    tool_version: str
    role: Literal["replica", "prefill", "decode"]
    replicas: int = Field(ge=1)
    model: InferenceEngineModel
    accelerator: InferenceEngineAccelerator


class ComponentNative(_Strict):
    args: dict[str, Any] | None = None
    envars: dict[str, str] | None = None
    config: dict[str, Any] | None = None


class Component(_Strict):
    metadata: ComponentMetadata
    standardized: InferenceEngine
    native: ComponentNative


# --- scenario: the load --------------------------------------------------------------------------------------
class SequenceLength(_Strict):
    distribution: Literal["fixed", "gaussian", "uniform", "other"]
    value: int | float = Field(ge=0)
    std_dev: float | None = Field(None, ge=0)
    min: int | None = Field(None, ge=0)
    max: int | None = Field(None, ge=1)


class MultiTurn(_Strict):
    enabled: bool = True
    max_turns: SequenceLength | None = None


class LoadMetadata(_Strict):
    schema_version: str = "0.0.1"
    cfg_id: str | None = None
    description: str | None = None


class LoadStandardized(_Strict):
    tool: str
    tool_version: str
    source: Literal["random", "sampled", "unknown"]
    input_seq_len: SequenceLength
    output_seq_len: SequenceLength | None = None
    multi_turn: MultiTurn | None = None
    rate_qps: float | None = Field(None, gt=0)
    concurrency: int | None = Field(None, ge=1)


class LoadNative(_Strict):
    args: dict[str, Any] | None = None
    config: dict[str, Any] | None = None


class Load(_Strict):
    metadata: LoadMetadata
    standardized: LoadStandardized
    native: LoadNative


class Scenario(_Strict):
    stack: tuple[Component, ...] | None = None
    load: Load | None = None


# --- results -------------------------------------------------------------------------------------------------
class AggregateRequests(_Strict):
    total: int = Field(ge=0)
    failures: int | None = Field(None, ge=0)
    input_length: CountStatistics | None = None
    output_length: CountStatistics | None = None


class AggregateLatency(_Strict):
    time_to_first_token: TimeStatistics | None = None
    time_per_output_token: TokenLatencyStatistics | None = None
    inter_token_latency: TokenLatencyStatistics | None = None
    request_latency: TimeStatistics | None = None


class AggregateThroughput(_Strict):
    input_token_rate: TokenRateStatistics | None = None
    output_token_rate: TokenRateStatistics | None = None
    total_token_rate: TokenRateStatistics | None = None
    request_rate: RequestRateStatistics | None = None


class AggregateRequestPerformance(_Strict):
    requests: AggregateRequests | None = None
    latency: AggregateLatency | None = None
    throughput: AggregateThroughput | None = None


class RequestPerformance(_Strict):
    aggregate: AggregateRequestPerformance | None = None


class ResourceMetrics(_Strict):
    cache_hit_rate: PortionStatistics | None = None
    gpu_utilization: PortionStatistics | None = None
    power_consumption: PowerStatistics | None = None


class ComponentObservability(_Strict):
    component_label: str = Field(description="a scenario.stack[].metadata.label")
    aggregate: ResourceMetrics | None = None


class Observability(_Strict):
    components: tuple[ComponentObservability, ...] | None = None
    metadata: HarnessMetadata | None = Field(None, description="the harness's own extras (an extension: the "
                                             "published Observability takes keys of its producers' choosing)")


class Results(_Strict):
    request_performance: RequestPerformance | None = None
    observability: Observability | None = None


class BenchmarkReport(_Strict):
    """One Benchmark Report: one measured cell, or one launch of it."""

    version: Literal["0.2.1"] = "0.2.1"
    run: Run
    scenario: Scenario | None = None
    results: Results

    def dump(self) -> dict[str, object]:
        """The report as JSON-ready data, every field not measured left out (as llm-d's ``dump`` does)."""
        return self.model_dump(mode="json", exclude_none=True)
