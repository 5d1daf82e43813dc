"""The axes a matrix sweeps (``axes:``), the SLO search an axis value may be instead of a point, and the rules that
pick cells out of the sweep to measure differently (``claims``, ``more_launches``, ``more_requests``).

Expanding the axes into cells is ``harness.plan.expand``; each rule names its cells by an axis selector, checked
against ``AXIS_NAMES`` by ``harness.config.matrix.Matrix``. An SLO search's probes are run by
``harness.pipeline.search``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from harness.config.parallel import Parallel
from harness.config.precision import Precision
from harness.config.speculation import Speculation
from harness.config.strict_model import StrictModel
from harness.config.topology import Topology


class LoadSearch(StrictModel):
    """An axis value that is a search, not a point: per server configuration (and workload, and the other load
    axis's value), the highest concurrency or request rate whose cell meets the matrix's SLO, found by doubling from
    ``min`` until a probe misses the SLO, stops raising throughput, or reaches ``max``, then bisecting between the
    last probe that met the SLO and the first that missed (``harness.pipeline.search``). Every probe is a cell."""

    search: Literal["slo"] = Field(description="what to search for: the highest load meeting `slo:`")
    min: float = Field(1, gt=0, description="the first probe")
    max: float = Field(64, gt=0, description="the highest load probed")
    max_probes: int = Field(8, ge=2, le=30, description="cells measured at most, reused ones included")
    saturation: float = Field(0.05, ge=0, lt=1, description="a probe that raises output throughput by less than "
                              "this share over the last passing probe ends the doubling: more load buys nothing")
    resolution: float = Field(0.1, gt=0, lt=1, description="request rates: stop bisecting once the bracket's "
                              "upper end is within this share of its lower end (concurrency stops at a step of 1)")

    @model_validator(mode="after")
    def _ordered(self) -> LoadSearch:
        if self.max < self.min:
            raise ValueError(f"max ({self.max:g}) is below min ({self.min:g})")
        return self

    @property
    def label(self) -> str:
        return f"search-slo[{self.min:g}..{self.max:g}]"


class Axes(StrictModel):
    _added_later = frozenset({"deployment"})

    model: tuple[str, ...] | None = Field(None, description="model names; default: every model")
    deployment: tuple[str, ...] | None = Field(None, description="deployments measured (names under "
                                               "deployments:); default: every deployment")
    runtime: tuple[str, ...] = ("vllm",)
    precision: tuple[Precision, ...] = (Precision(),)
    parallel: tuple[Parallel, ...] = (Parallel(),)
    speculation: tuple[Speculation, ...] = Field(default_factory=lambda: (Speculation.off(),))
    topology: tuple[Topology, ...] = Field(
        default_factory=lambda: (Topology.colocated(),),
        description="how each recipe is deployed: colocated, {replicas: R} behind the engine's router, or "
                    "{prefill: N, decode: M} with the engine's KV transfer")
    concurrency: tuple[Annotated[int, Field(gt=0)] | LoadSearch, ...] = Field(
        (1,), description="users (sessions, for agent workloads) in flight; {search: slo} searches the highest "
                          "concurrency meeting the SLO")
    workload: tuple[str, ...] | None = Field(None, description="workload names; default: every workload")
    request_rate: tuple[Annotated[float, Field(gt=0)] | LoadSearch, ...] | None = Field(
        None, description="requests/s per cell, capped at the cell's concurrency (.inf: fixed concurrency); "
                          "{search: slo} searches the highest rate meeting the SLO; default: load.request_rate")

    @field_validator("model", "deployment", "runtime", "precision", "parallel", "speculation", "topology",
                     "concurrency", "workload", "request_rate")
    @classmethod
    def _not_empty(cls, value: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        if value is not None and len(value) == 0:
            raise ValueError("an axis needs at least one value")
        return value


AXIS_NAMES = tuple(Axes.model_fields)

LAUNCH_AXES = ("model", "runtime", "precision", "parallel", "speculation", "topology")
"""The axes that make launched configurations; beside deployments, ``runtime`` must be named for any to launch."""


class MoreLaunches(StrictModel):
    """Cells measured on more server launches than the rest: a comparison the report leads with gets an interval
    without launching every configuration again."""

    cells: dict[str, Any] = Field(min_length=1, description="axis selector of the cells (as an exclude rule names "
                                  "them); their servers are launched again, and only these cells measured there")
    launches: int = Field(ge=2, le=20, description="launches of these cells, in the interleaved rounds; the "
                          "matrix's `launches` (or `--launches`) when that is more")


class MoreRequests(StrictModel):
    """Cells measured on more requests than their workload names: a figure whose within-launch noise is wider than
    the gate's tolerance (a short cell on a CPU server) gets the requests that narrow it, without spending them on
    every cell."""

    cells: dict[str, Any] = Field(min_length=1, description="axis selector of the cells (as an exclude rule names "
                                  "them)")
    num_requests: int = Field(gt=0, le=1_000_000, description="their workload's `num_requests` raised to this "
                              "(sessions for an agent workload); a cell already measuring more keeps its count")


class Claims(StrictModel):
    """Cells measured on enough requests that their SLO claims can be judged: a p99 bound needs 459 requests with
    none over it at LoadGen's 99% confidence (``harness plan`` prints what each cell's claims need)."""

    cells: tuple[dict[str, Any], ...] = Field(min_length=1, description="axis selectors of the cells (as exclude "
                                              "rules name them): the ones the report may recommend")
    num_requests: int = Field(gt=0, le=1_000_000, description="their workload's `num_requests` raised to this "
                              "(sessions for an agent workload); a cell already measuring more keeps its count")
