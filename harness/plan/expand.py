"""Expand a validated Matrix into cells, grouped by the server each one needs: pure, launches nothing.

What a model, the hardware or an engine cannot run is the recipe rules' to decide (``harness.plan.rules.vet``),
after expansion.
"""

from __future__ import annotations

import itertools

from harness.config.load import LoadPattern
from harness.config.matrix import Matrix
from harness.config.parallel import Parallel
from harness.config.precision import Precision
from harness.config.server import RuntimeEnv
from harness.config.speculation import Speculation
from harness.config.topology import Topology
from harness.errors import ConfigError
from harness.plan.cells import Cell, Plan, ServerConfig, ServerGroup, SloSearch


def _searches(matrix: Matrix, server: ServerConfig) -> tuple[SloSearch, ...]:
    """The server's SLO searches, one per workload and value of the other load axis, minus the excluded ones."""
    found = matrix.search()
    if found is None:
        return ()
    axis, spec = found
    searches = []
    for name in matrix.workload_names():
        if axis == "concurrency":
            candidates = [SloSearch(server=server, workload_name=name, workload=matrix.workloads[name], axis=axis,
                                    spec=spec, repeats=matrix.repeats,
                                    load=LoadPattern.model_validate({**matrix.load.model_dump(), "request_rate": rate}))
                          for rate in matrix.request_rates()]
        else:
            candidates = [SloSearch(server=server, workload_name=name, workload=matrix.workloads[name], axis=axis,
                                    spec=spec, concurrency=concurrency, load=matrix.load, repeats=matrix.repeats)
                          for concurrency in matrix.concurrencies()]
        searches += [s for s in candidates if not any(s.matches(rule) for rule in matrix.exclude)]
    return tuple(searches)


def expand(matrix: Matrix, source: str = "matrix") -> Plan:
    """Cartesian product of the axes minus the excludes, grouped by server in first-seen order; an axis value that
    is an SLO search adds one search per server configuration (and workload, and value of the other load axis)."""
    axes = matrix.axes
    servers = _deployments(matrix) + [
        ServerConfig(
            runtime=runtime, model_name=model_name, model=matrix.models[model_name], precision=precision,
            parallel=parallel, speculation=speculation, hardware=matrix.hardware, settings=matrix.server,
            runtime_env=matrix.runtimes.get(runtime, RuntimeEnv()), topology=topology,
            expert_load=matrix.telemetry.expert_load,
        )
        for model_name, runtime, precision, parallel, speculation, topology in itertools.product(
            matrix.model_names(), axes.runtime, axes.precision, axes.parallel, axes.speculation, axes.topology
        ) if matrix.launches_configurations()
    ]
    groups: list[ServerGroup] = []
    for server in servers:
        candidates = (
            Cell(server=server, workload_name=name, workload=matrix.workloads[name], concurrency=concurrency,
                 load=LoadPattern.model_validate({**matrix.load.model_dump(), "request_rate": rate}),
                 repeats=matrix.repeats, min_measured_s=matrix.min_measured_s)
            for name, concurrency, rate in itertools.product(
                matrix.workload_names(), matrix.concurrencies(), matrix.request_rates())
        )
        cells = tuple(_with_requests(matrix, c) for c in candidates
                      if not any(c.matches(rule) for rule in matrix.exclude))
        searches = _searches(matrix, server)
        if cells or searches:
            groups.append(ServerGroup(server=server, cells=cells, searches=searches))
    if not groups:
        raise ConfigError(source, "exclude", "the excludes remove every cell of the matrix",
                          "loosen or delete an exclude rule, or add axis values")
    plan = Plan(matrix=matrix, groups=tuple(groups))
    _check_ceilings(plan, source)
    for key, selector in matrix.cell_rules():
        if not any(c.matches(selector) for c in plan.cells):
            raise ConfigError(source, key, f"{selector} selects no cell of the matrix",
                              "name axis values the matrix has (after its excludes), or delete the rule")
    return plan


def _deployments(matrix: Matrix) -> list[ServerConfig]:
    """One server per deployment measured: its declared recipe (the defaults where undeclared), priced as the
    matrix's hardware (one matrix prices every device alike), nothing to launch."""
    servers = []
    for name in matrix.deployment_names():
        deployment = matrix.deployments[name]
        declared = {axis: value for axis in ("precision", "parallel", "speculation", "topology")
                    if (value := getattr(deployment.declared, axis)) is not None}
        servers.append(ServerConfig(
            runtime=deployment.runtime, model_name=deployment.model, model=matrix.models[deployment.model],
            hardware=matrix.hardware, settings=matrix.server, runtime_env=RuntimeEnv(),
            expert_load=matrix.telemetry.expert_load, deployment_name=name, deployment=deployment,
            **{"precision": Precision(), "parallel": Parallel(), "speculation": Speculation.off(),
               "topology": Topology.colocated(), **declared},
        ))
    return servers


def _check_ceilings(plan: Plan, source: str) -> None:
    """No deployment cell (or search probe) runs more requests in flight than its deployment allows, and the plan's
    least count of requests fits its budget (a search's probes, repeats a minimum duration adds and parity come on
    top: the run stops sending at the budget, recording the rest as not sent)."""
    for group in plan.groups:
        deployment = group.server.deployment
        if deployment is None:
            continue
        loads = [c.concurrency for c in group.cells] + [int(s.spec.max) for s in group.searches
                                                        if s.axis == "concurrency"]
        loads += [s.concurrency for s in group.searches if s.concurrency is not None]
        name = group.server.deployment_name
        least = sum((c.workload.requests_for(c.concurrency) * c.repeats + c.workload.warmup_requests)
                    * plan.launches_of(c) for c in group.cells)
        if least > deployment.limits.max_requests:
            raise ConfigError(source, f"deployments.{name}.limits.max_requests", f"the plan sends deployment {name} "
                              f"at least {least} requests (every cell's measured and warm-up requests, on each of its "
                              f"launches), more than its limit of {deployment.limits.max_requests}",
                              "measure fewer or shorter cells of it, or raise the limit if its owner agrees")
        ceiling = deployment.limits.max_concurrency
        if loads and max(loads) > ceiling:
            raise ConfigError(source, "axes.concurrency", f"{max(loads)} requests in flight on deployment "
                              f"{group.server.deployment_name} exceed deployments.{group.server.deployment_name}"
                              f".limits.max_concurrency ({ceiling})",
                              "lower the axis (or the search's max), exclude those cells of the deployment, or "
                              "raise the limit if the deployment's owner agrees")


def _with_requests(matrix: Matrix, cell: Cell) -> Cell:
    """The cell with its workload's request count raised to what ``claims`` or ``more_requests`` asks, when one
    selects the cell."""
    floor = matrix.requests_floor(cell.matches)
    count = getattr(cell.workload, "num_requests", None)
    if floor is None or count is None or count >= floor:
        return cell
    workload = cell.workload.model_copy(update={"num_requests": floor})
    return cell.model_copy(update={"workload": workload})
