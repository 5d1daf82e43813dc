"""The matrix a user writes, as strict models: validated once at load, immutable afterwards.

This module owns the top of the schema (the matrix, its models and SLO) and ``load_matrix``; its larger sections
have modules of their own: ``axes`` (the sweep, SLO searches, the rules that pick cells), ``hardware`` (with cost
and estimate), ``gates``, and the sections beside them (``workloads``, ``server``, ``evidence``, ...). Expanding axes
into cells is ``harness.plan.expand``; turning a cell into an engine's flags is the runtime adapters'. Every model
forbids unknown keys (``strict_model``), so a typo in YAML is an error that names the key, never a silently ignored
setting. The engine names and model families a matrix uses are checked one layer up, by the adapters that declare
them (``harness.servers.runtime_lookup.check_engines``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from harness.config.axes import AXIS_NAMES, LAUNCH_AXES, Axes, Claims, LoadSearch, MoreLaunches, MoreRequests
from harness.config.deployments import Deployment
from harness.config.evidence_sections import ParitySpec, ProfileSpec
from harness.config.executor import Executor, LocalExecutor
from harness.config.fixtures import check_fixture_id
from harness.config.gates import GateSpec
from harness.config.hardware import CostSpec, CpuHardware, EstimateSpec, Hardware
from harness.config.load import LoadPattern
from harness.config.names import MATRIX_NAME_PATTERN, Name
from harness.config.precision import Precision
from harness.config.predict import PredictSpec
from harness.config.server import RuntimeEnv, ServerSettings
from harness.config.strict_model import StrictModel
from harness.config.strict_yaml import DuplicateKeyError, load_yaml
from harness.config.validation_errors import config_error_from_validation
from harness.config.workloads import Workload
from harness.errors import ConfigError


class Slo(StrictModel):
    """Service-level objective: a request is 'good' (goodput) when it meets every bound that is set."""

    ttft_p99_ms: float | None = Field(None, gt=0)
    tpot_p50_ms: float | None = Field(None, gt=0)
    ttft_ms: float | None = Field(None, gt=0, description="per-request TTFT bound for goodput")
    tpot_ms: float | None = Field(None, gt=0, description="per-request TPOT bound for goodput")


class Reference(StrictModel):
    precision: Precision = Field(default_factory=Precision, description="the cell every parity check compares to")


class ModelSpec(StrictModel):
    _added_later = frozenset({"family", "routed_experts", "num_nextn_predict_layers", "quantization"})

    id: str = Field(description="HF id, local directory, or 'fixture:<name>' for a model the project builds")
    revision: str | None = None
    checkpoints: dict[str, str] = Field(
        default_factory=dict, description="weight precision -> checkpoint id, for pre-quantized checkpoints"
    )
    max_model_len: int = Field(2048, gt=0)
    family: str | None = Field(None, description="model family, for each engine's tool-call parser (the families "
                               "are those the engines' adapters declare: harness.servers.runtime_lookup)")
    tool_call_parser: str | dict[str, str] | None = Field(
        None, description="tool-call parser, one name for every runtime or runtime -> name; default: the family's")
    routed_experts: int | None = Field(None, gt=0, description="routed experts per MoE layer, when the model's "
                                       "config.json is not local (checked against EP at plan time)")
    num_nextn_predict_layers: int | None = Field(None, ge=0, description="MTP layers, when config.json is not "
                                                 "local (MTP speculation needs at least one)")
    quantization: dict[str, str] = Field(
        default_factory=dict, description="weight precision -> the engine's --quantization value where the "
                                          "adapter's default is wrong for the checkpoint (e.g. int4: moe_wna16); "
                                          "'none' for a checkpoint of rounded weights stored in bf16, which the "
                                          "engine loads as it is")
    reference: Reference = Field(default_factory=Reference)

    @field_validator("id")
    @classmethod
    def _known_fixture(cls, value: str) -> str:
        return check_fixture_id(value)

    @field_validator("checkpoints")
    @classmethod
    def _known_checkpoints(cls, value: dict[str, str]) -> dict[str, str]:
        return {precision: check_fixture_id(model_id) for precision, model_id in value.items()}


class TelemetrySpec(StrictModel):
    """What the harness records from inside the engine while each cell's load runs."""

    expert_load: bool = Field(
        False, description="count the tokens each MoE layer routes to each expert during every cell's measured "
        "load (vLLM: the project's worker extension on vLLM's router seam; SGLang: its expert distribution "
        "recorder), stored with the cell and shown in the report as heatmaps and imbalance; the collector's own "
        "time is measured and stated")


class Matrix(StrictModel):
    _added_later = frozenset({"predict", "claims", "more_launches", "more_requests", "telemetry", "min_measured_s",
                              "deployments"})

    name: str = Field(pattern=MATRIX_NAME_PATTERN, description="lower-case letters, digits, '.', '_', '-' (64 at "
                      "most); reports go to reports/<name>/")
    description: str = ""
    hardware: Hardware = Field(default_factory=CpuHardware)
    slo: Slo = Field(default_factory=Slo)
    models: dict[Name, ModelSpec] = Field(min_length=1, description="each model by its name (letters, digits, "
                                          "'.', '_', '-'; 64 at most: a part of every cell's label)")
    workloads: dict[Name, Workload] = Field(min_length=1, description="each workload by its name (the same "
                                            "pattern as models)")
    deployments: dict[Name, Deployment] = Field(
        default_factory=dict, description="servers the harness did not launch, measured as they are at their base "
        "URL (docs/deployments.md); with deployments, configurations are launched beside them only when "
        "axes.runtime is named")
    axes: Axes = Field(default_factory=Axes)
    exclude: tuple[dict[str, Any], ...] = ()
    server: ServerSettings = Field(default_factory=ServerSettings)
    runtimes: dict[str, RuntimeEnv] = Field(default_factory=dict)
    parity: ParitySpec | None = None
    profile: ProfileSpec | None = None
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec, description="what is recorded inside the "
                                     "engine beside each cell's load")
    gates: GateSpec = Field(default_factory=GateSpec)
    cost: CostSpec = Field(default_factory=CostSpec)
    load: LoadPattern = Field(default_factory=LoadPattern, description="how every cell's requests are paced")
    repeats: int = Field(1, ge=1, le=20, description="measured runs per cell; the summary gives their median "
                                                     "and spread")
    min_measured_s: float | None = Field(
        None, gt=0, le=3600, description="measure every cell for at least this many seconds, as MLPerf LoadGen's "
        "min_duration: the cell's workload runs again on fresh prompts (each run its `num_requests`) until its "
        "runs' measured load adds up to this, at least `repeats` runs and at most 50; the cell's figures are the "
        "median of its runs, so a stall of a second moves one run, not the cell. Unset: `repeats` runs")
    launches: int = Field(1, ge=1, le=20, description="server launches per configuration, run in interleaved "
                          "rounds (every configuration once per round); each launch is one sample of the "
                          "launch-to-launch noise the gate and the report's comparisons judge against. "
                          "`harness run --launches N` overrides it")
    claims: Claims | None = Field(None, description="cells that get the requests their SLO claims need")
    more_launches: tuple[MoreLaunches, ...] = Field(
        (), description="cells launched more often than `launches`, for an interval on the comparison they make "
        "(speculation against off at concurrency 1, say) at the cost of relaunching only their servers")
    more_requests: tuple[MoreRequests, ...] = Field(
        (), description="cells measured on more requests than their workload's `num_requests`, so that a short "
        "cell's run-to-run noise within a launch narrows (`harness plan` prints each cell's count)")
    unsupported: Literal["error", "skip"] = Field(
        "error", description="a cell the model, hardware or engine cannot run (MTP without MTP layers, a flag the "
                             "engine lacks): error names the exclude to add; skip drops it and `harness plan` "
                             "lists it with the reason")
    estimate: EstimateSpec = Field(default_factory=EstimateSpec, description="priors of the plan's cost estimate")
    predict: PredictSpec = Field(default_factory=PredictSpec, description="assumptions of the cells' predictions")
    executor: Executor = Field(default_factory=LocalExecutor, description="where server groups run: local (here, "
                               "one after another) or slurm (one job per group); `harness run --executor` "
                               "overrides the kind")

    @model_validator(mode="after")
    def _names_resolve(self) -> Matrix:
        for axis, known in (("model", self.models), ("workload", self.workloads), ("deployment", self.deployments)):
            for name in getattr(self.axes, axis) or ():
                if name not in known:
                    raise ValueError(f"axes.{axis}: {name!r} is not defined; defined: {', '.join(known)}")
        for i, rule in enumerate(self.exclude):
            unknown = sorted(set(rule) - set(AXIS_NAMES))
            if unknown or not rule:
                raise ValueError(
                    f"exclude[{i}]: keys must be axis names ({', '.join(AXIS_NAMES)}); got {unknown or 'nothing'}"
                )
        for key, selector in self.cell_rules():
            unknown = sorted(set(selector) - set(AXIS_NAMES))
            if unknown or not selector:
                raise ValueError(f"{key}: keys must be axis names ({', '.join(AXIS_NAMES)}); got "
                                 f"{unknown or 'nothing'}")
        self._check_load()
        self._check_deployments()
        return self

    def launches_configurations(self) -> bool:
        """Whether the axes make launched servers: always without deployments; beside them, when the matrix names
        ``axes.runtime`` (the deployments alone otherwise)."""
        return not self.deployments or "runtime" in self.axes.model_fields_set

    def deployment_names(self) -> tuple[str, ...]:
        return self.axes.deployment or tuple(self.deployments)

    def _check_deployments(self) -> None:
        """What a deployment cannot vary or reach, refused before anything is sent to it."""
        if self.axes.deployment is not None and not self.deployments:
            raise ValueError("axes.deployment names deployments, but the matrix has no deployments: section")
        if not self.deployments:
            return
        for name, deployment in self.deployments.items():
            if deployment.model not in self.models:
                raise ValueError(f"deployments.{name}.model: {deployment.model!r} is not defined; defined: "
                                 f"{', '.join(self.models)}")
            ref = deployment.parity_reference
            if ref is not None and (ref not in self.deployments or ref == name):
                raise ValueError(f"deployments.{name}.parity_reference: {ref!r} is not another deployment; "
                                 f"deployments: {', '.join(self.deployments)}")
        if not self.launches_configurations():
            stray = [axis for axis in LAUNCH_AXES if axis in self.axes.model_fields_set]
            if stray:
                raise ValueError(f"axes.{stray[0]}: with deployments, the recipe axes make launched servers only "
                                 "beside axes.runtime; a deployment's own recipe is declared, never varied. Write it "
                                 f"under deployments.<name>.declared, or name axes.runtime to launch servers across "
                                 f"axes.{stray[0]} beside the deployments")

    def cell_rules(self) -> list[tuple[str, dict[str, Any]]]:
        """(key, axis selector) of every rule that picks cells to measure differently: more launches, more
        requests."""
        rules = [(f"more_launches[{i}].cells", more.cells) for i, more in enumerate(self.more_launches)]
        rules += [(f"more_requests[{i}].cells", more.cells) for i, more in enumerate(self.more_requests)]
        return rules + [(f"claims.cells[{i}]", rule) for i, rule in enumerate(self.claims.cells if self.claims else ())]

    def requests_floor(self, matches: Callable[[dict[str, Any]], bool]) -> int | None:
        """The most requests a ``claims`` or ``more_requests`` rule asks of a cell (``matches`` tells whether a
        selector picks it); None when none picks it."""
        claims = [self.claims.num_requests] if self.claims and any(map(matches, self.claims.cells)) else []
        more = [m.num_requests for m in self.more_requests if matches(m.cells)]
        return max(claims + more, default=None)

    def _check_searches(self) -> None:
        searches = {axis: [v for v in getattr(self.axes, axis) or () if isinstance(v, LoadSearch)]
                    for axis in ("concurrency", "request_rate")}
        for axis, found in searches.items():
            if len(found) > 1:
                raise ValueError(f"axes.{axis}: one {{search: slo}} per axis; merge them into one range")
            if found and not any(v is not None for v in self.slo.model_dump().values()):
                raise ValueError(f"axes.{axis}: an SLO search needs an SLO to meet; set slo.ttft_p99_ms, "
                                 "slo.tpot_p50_ms, slo.ttft_ms or slo.tpot_ms")
        if searches["concurrency"] and searches["request_rate"]:
            raise ValueError("axes.concurrency and axes.request_rate both search; search one, list points on the "
                             "other")
        for search in searches["concurrency"]:
            if search.min != int(search.min) or search.max != int(search.max):
                raise ValueError(f"axes.concurrency: a concurrency search needs whole numbers, got min {search.min:g}"
                                 f" and max {search.max:g}")

    def _check_load(self) -> None:
        """Load settings the cells or the server cannot honour fail here, before anything launches."""
        self._check_searches()
        if self.axes.request_rate is not None and self.load.request_rate is not None:
            raise ValueError("load.request_rate and axes.request_rate both set; keep one")
        if self.load.burstiness != 1.0 and all(r is None or r == float("inf") for r in self.request_rates()) and \
                not any(isinstance(r, LoadSearch) for r in self.axes.request_rate or ()):
            raise ValueError("load.burstiness shapes the gaps between arrivals at a request rate; "
                             "set load.request_rate or axes.request_rate")
        for workload_name in self.workload_names():
            longest = self.workloads[workload_name].max_sequence_tokens()
            for model_name in self.model_names():
                limit = self.models[model_name].max_model_len
                if longest is not None and longest > limit:
                    raise ValueError(f"workloads.{workload_name}: prompt + output reach {longest} tokens, more "
                                     f"than models.{model_name}.max_model_len ({limit}); shorten the workload "
                                     "or raise max_model_len")

    def request_rates(self) -> tuple[float | None, ...]:
        """The request rates cells run at (None or inf: fixed concurrency); a search's probes come on top."""
        rates = self.axes.request_rate or (self.load.request_rate,)
        return tuple(r for r in rates if not isinstance(r, LoadSearch))

    def concurrencies(self) -> tuple[int, ...]:
        """The concurrencies cells run at; a search's probes come on top."""
        return tuple(c for c in self.axes.concurrency if not isinstance(c, LoadSearch))

    def search(self) -> tuple[str, LoadSearch] | None:
        """The axis that searches and how, when one does."""
        for axis in ("concurrency", "request_rate"):
            for value in getattr(self.axes, axis) or ():
                if isinstance(value, LoadSearch):
                    return axis, value
        return None

    def model_names(self) -> tuple[str, ...]:
        return self.axes.model or tuple(self.models)

    def workload_names(self) -> tuple[str, ...]:
        return self.axes.workload or tuple(self.workloads)


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate a matrix file; every problem becomes one ConfigError naming file, key and fix."""
    source = str(path)
    file = Path(path)
    if not file.is_file():
        raise ConfigError(source, "", "no such file", "check the path; matrices live in matrices/*.yaml")
    try:
        raw = load_yaml(file.read_text())
    except DuplicateKeyError as exc:
        raise ConfigError(source, f"{exc.path} (line {exc.line})",
                          f"written twice, first at line {exc.first_line}: YAML would keep the later value silently",
                          "keep one of them (merge the two blocks if both hold settings)") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = f"invalid YAML: {getattr(exc, 'problem', exc)}"
        raise ConfigError(source, where, problem, "fix the YAML syntax") from exc
    if not isinstance(raw, dict):
        raise ConfigError(source, "", "the file must hold a mapping (name:, models:, workloads:, axes: ...)",
                          "start from matrices/default.yaml")
    try:
        return Matrix.model_validate(raw)
    except ValidationError as exc:
        raise config_error_from_validation(source, exc, Matrix) from exc
