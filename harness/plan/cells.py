"""The plan's types: a server configuration, a cell measured on it, the launches, and the plan of them all.

A cell is one measurement: a server configuration plus the client-side settings (workload, concurrency) it
is driven with. Cells whose server configurations are equal share one launch, because launching is the
dominant cost of a sweep. Ids are hashes of the spec, so a rerun finds the same cell under the same id.

An SLO search (``SloSearch``) is a value in the plan too: which server, workload and axis it searches. Which loads
it probes is decided where servers run (``harness.pipeline.search``); each probe is an ordinary ``Cell``, so a probe
at concurrency 8 is the same cell (same id, same stored result) as a listed concurrency-8 point, and a search
reuses what the grid measured and resumes as any cell does.
``harness.plan.expand`` builds them from a matrix; ``harness.plan.rules`` drops what cannot run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from harness.config.axes import LoadSearch
from harness.config.deployments import Deployment
from harness.config.hardware import Hardware
from harness.config.load import LoadPattern
from harness.config.matrix import Matrix, ModelSpec
from harness.config.parallel import Parallel
from harness.config.precision import Precision
from harness.config.server import RuntimeEnv, ServerSettings
from harness.config.speculation import Speculation
from harness.config.topology import Topology
from harness.config.workloads import Workload

MAX_RUNS = 50
"""The most runs a cell with a minimum measured duration takes (``Matrix.min_measured_s``), however short each."""


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def _prune_added_later(model: Any, dumped: Any) -> Any:
    """``dumped`` (a JSON dump of ``model``) without the fields each model class lists in ``_added_later`` that
    are at their defaults, so that adding an optional setting never renames the cells users already measured."""
    if isinstance(model, RootModel):
        return _prune_added_later(model.root, dumped)
    if isinstance(model, BaseModel) and isinstance(dumped, dict):
        later: frozenset[str] = getattr(type(model), "_added_later", frozenset())
        pruned = {}
        for name, value in dumped.items():
            field = type(model).model_fields.get(name)
            current = getattr(model, name, None)
            if name in later and field is not None and current == field.get_default(call_default_factory=True):
                continue
            pruned[name] = _prune_added_later(current, value)
        return pruned
    if isinstance(model, tuple | list) and isinstance(dumped, list):
        return [_prune_added_later(m, d) for m, d in zip(model, dumped, strict=True)]
    if isinstance(model, dict) and isinstance(dumped, dict):
        return {k: _prune_added_later(model.get(k), v) for k, v in dumped.items()}
    return dumped


class ServerConfig(BaseModel):
    """Everything that decides how a server process is launched; equal configs share one launch."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    _added_later: ClassVar[frozenset[str]] = frozenset({"topology", "deployment_name"})

    runtime: str
    model_name: str
    model: ModelSpec
    precision: Precision
    parallel: Parallel
    speculation: Speculation
    hardware: Hardware
    settings: ServerSettings
    runtime_env: RuntimeEnv
    topology: Topology = Field(default_factory=Topology.colocated)
    expert_load: bool = False
    """The engine's expert-load collector is on (``telemetry.expert_load``)."""
    deployment_name: str | None = None
    """The deployment this server is (``deployments.<name>``): reached, never launched. Its precision, parallelism,
    speculation and topology are the declared ones (the defaults where undeclared: ``deployment.declared`` says
    which)."""
    deployment: Deployment | None = None

    @property
    def server_id(self) -> str:
        # Timeouts, the listen address and docker plumbing do not change what is measured: they stay out. So does
        # the expert-load collector: its own time is measured in every cell and stated beside the counts (3-5% of
        # a cell on the tiny fixtures on a CPU), so a baseline taken without it still judges the figures taken with it.
        # A deployment is its name, model and declared recipe: its address, TLS and limits are how it is reached
        # (a port-forward's port changes every day), not what is measured.
        dumped = self.model_dump(mode="json", exclude={"settings": {"startup_timeout_s", "request_timeout_s", "host"},
                                                       "runtime_env": {"docker"}, "expert_load": True,
                                                       "deployment": True})
        if self.deployment is not None:
            dumped["served_model"] = self.deployment.served_model
        return _digest(_prune_added_later(self, dumped))

    @property
    def is_deployment(self) -> bool:
        """Reached at a base URL, never launched (``deployments:``)."""
        return self.deployment is not None

    @property
    def label(self) -> str:
        if self.deployment is not None:
            declared = [getattr(self, axis).label for axis in self.deployment.declared_axes()]
            return "/".join((str(self.deployment_name), self.model_name, self.runtime, *declared))
        parts = (self.model_name, self.runtime, self.precision.label, self.parallel.label, self.speculation.label)
        # colocated adds nothing, so the labels users already know stay as they were
        return "/".join(parts if self.topology.is_colocated else (*parts, self.topology.label))


class Cell(BaseModel):
    """One measurement: a server configuration driven by one workload at one concurrency."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: ServerConfig
    workload_name: str
    workload: Workload
    concurrency: int
    load: LoadPattern = Field(default_factory=LoadPattern)
    repeats: int = 1
    min_measured_s: float | None = None
    """Run the workload again (fresh prompts) until the runs' measured load adds up to this (``Matrix``'s)."""

    @property
    def most_runs(self) -> int:
        """How many runs the cell may take: ``repeats``, or up to ``MAX_RUNS`` while it measures its minimum."""
        return self.repeats if self.min_measured_s is None else max(self.repeats, MAX_RUNS)

    @property
    def cell_id(self) -> str:
        identity: dict[str, Any] = {"server": self.server.server_id, "workload": self.workload.identity(),
                                    "concurrency": self.concurrency}
        # Added after ids were first published: they join the identity only when set, so ids of cells
        # measured before stay valid.
        if self.load != LoadPattern():
            identity["load"] = self.load.model_dump(mode="json")
        if self.repeats != 1:
            identity["repeats"] = self.repeats
        if self.min_measured_s is not None:
            identity["min_measured_s"] = self.min_measured_s
        return _digest(identity)

    @property
    def label(self) -> str:
        pacing = f"/{self.load.label}" if self.load.label else ""
        return f"{self.server.label}/{self.workload_name}/c{self.concurrency}{pacing}"

    def axis_value(self, axis: str) -> Any:
        """The value this cell takes on a matrix axis, as excludes and selectors see it."""
        return {
            "model": self.server.model_name, "deployment": self.server.deployment_name,
            "runtime": self.server.runtime, "precision": self.server.precision,
            "parallel": self.server.parallel, "speculation": self.server.speculation,
            "topology": self.server.topology,
            "concurrency": self.concurrency, "workload": self.workload_name,
            "request_rate": self.load.request_rate,
        }[axis]

    def matches(self, selector: dict[str, Any]) -> bool:
        """True when every axis named in ``selector`` takes the selected value (excludes, profile picks); a list
        selects any of its values."""
        for axis, wanted in selector.items():
            value = self.axis_value(axis)
            if not any(_axis_matches(value, one) for one in (wanted if isinstance(wanted, list) else [wanted])):
                return False
        return True


def _axis_matches(value: Any, wanted: Any) -> bool:
    if isinstance(value, Precision | Parallel | Speculation | Topology):
        return bool(value.matches(wanted))
    return bool(value == wanted)


SearchAxis = Literal["concurrency", "request_rate"]


class SloSearch(BaseModel):
    """One search: the highest ``axis`` value whose cell meets the SLO, the other load settings fixed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: ServerConfig
    workload_name: str
    workload: Workload
    axis: SearchAxis
    spec: LoadSearch
    concurrency: int | None = None
    """The fixed concurrency of a request-rate search (the cap on requests in flight)."""
    load: LoadPattern = Field(default_factory=LoadPattern)
    """The fixed pacing of a concurrency search (its request rate, if any)."""
    repeats: int = 1

    @property
    def search_id(self) -> str:
        return _digest({"server": self.server.server_id, "workload": self.workload.identity(), "axis": self.axis,
                        "spec": self.spec.model_dump(mode="json"), "concurrency": self.concurrency,
                        "load": self.load.model_dump(mode="json"), "repeats": self.repeats})

    @property
    def integral(self) -> bool:
        return self.axis == "concurrency"

    def probe(self, value: float) -> Cell:
        """The cell that measures the search at ``value``."""
        if self.axis == "concurrency":
            return Cell(server=self.server, workload_name=self.workload_name, workload=self.workload,
                        concurrency=int(value), load=self.load, repeats=self.repeats)
        assert self.concurrency is not None  # a rate search always has its cap
        return Cell(server=self.server, workload_name=self.workload_name, workload=self.workload,
                    concurrency=self.concurrency, load=self.load.model_copy(update={"request_rate": float(value)}),
                    repeats=self.repeats)

    @property
    def label(self) -> str:
        fixed = f"c{self.concurrency}" if self.axis == "request_rate" else (self.load.label or "")
        parts = [self.server.label, self.workload_name, *([fixed] if fixed else []), f"{self.axis} {self.spec.label}"]
        return "/".join(parts)

    def matches(self, selector: dict[str, Any]) -> bool:
        """Excludes and selectors: the searched axis matches ``search`` (or ``{search: slo, ...}``); every other
        axis matches as the probe cells' do."""
        if self.axis in selector:
            wanted = selector[self.axis]
            spec = self.spec.model_dump()
            if not any(one == "search" or (isinstance(one, dict) and all(spec.get(k) == v for k, v in one.items()))
                       for one in (wanted if isinstance(wanted, list) else [wanted])):
                return False
        rest = {axis: value for axis, value in selector.items() if axis != self.axis}
        return self.probe(self.spec.min).matches(rest)


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """One launch: the server and, in run order, every cell measured on it, then its SLO searches
    (their probe cells join ``cells`` once a run has chosen them: ``harness.pipeline.search``)."""

    server: ServerConfig
    cells: tuple[Cell, ...]
    searches: tuple[SloSearch, ...] = ()


@dataclass(frozen=True, slots=True)
class SkippedGroup:
    """A server the recipe rules dropped (``unsupported: skip``), with its cells and why."""

    server: ServerConfig
    cells: tuple[Cell, ...]
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    matrix: Matrix
    groups: tuple[ServerGroup, ...]
    skipped: tuple[SkippedGroup, ...] = ()

    @property
    def cells(self) -> tuple[Cell, ...]:
        return tuple(cell for group in self.groups for cell in group.cells)

    def launches_of(self, cell: Cell, base: int | None = None) -> int:
        """Server launches the cell is measured on: ``base`` (the command line's) or the matrix's ``launches``,
        raised by any ``more_launches`` rule that selects it."""
        floor = base or self.matrix.launches
        return max([floor, *(m.launches for m in self.matrix.more_launches if cell.matches(m.cells))])

    def rounds(self, base: int | None = None) -> int:
        """Interleaved rounds of a run: the most launches any cell (or search probe, as its axis values) has."""
        floor = base or self.matrix.launches
        probes = [s.probe(s.spec.min) for s in self.searches]
        return max([floor, *(self.launches_of(c, base) for c in (*self.cells, *probes))])

    @property
    def searches(self) -> tuple[SloSearch, ...]:
        return tuple(search for group in self.groups for search in group.searches)
