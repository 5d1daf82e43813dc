"""Expand a validated Matrix into cells, grouped by the server each one needs: pure, launches nothing.

What a model, the hardware or an engine cannot run is the recipe rules' to decide (``harness.plan.rules.vet``),
after expansion.
"""

from __future__ import annotations

import itertools

from harness.config.load import LoadPattern
from harness.config.matrix import Matrix
from harness.config.server import RuntimeEnv
from harness.errors import ConfigError
from harness.plan.cells import Cell, Plan, ServerConfig, ServerGroup


def expand(matrix: Matrix, source: str = "matrix") -> Plan:
    """Cartesian product of the axes minus the excludes, grouped by server in first-seen order."""
    axes = matrix.axes
    servers = [
        ServerConfig(
            runtime=runtime, model_name=model_name, model=matrix.models[model_name], precision=precision,
            parallel=parallel, speculation=speculation, hardware=matrix.hardware, settings=matrix.server,
            runtime_env=matrix.runtimes.get(runtime, RuntimeEnv()), topology=topology,
        )
        for model_name, runtime, precision, parallel, speculation, topology in itertools.product(
            matrix.model_names(), axes.runtime, axes.precision, axes.parallel, axes.speculation, axes.topology
        )
    ]
    groups: list[ServerGroup] = []
    for server in servers:
        candidates = (
            Cell(server=server, workload_name=name, workload=matrix.workloads[name], concurrency=concurrency,
                 load=LoadPattern.model_validate({**matrix.load.model_dump(), "request_rate": rate}),
                 repeats=matrix.repeats)
            for name, concurrency, rate in itertools.product(
                matrix.workload_names(), axes.concurrency, matrix.request_rates())
        )
        cells = tuple(c for c in candidates if not any(c.matches(rule) for rule in matrix.exclude))
        if cells:
            groups.append(ServerGroup(server=server, cells=cells))
    if not groups:
        raise ConfigError(source, "exclude", "the excludes remove every cell of the matrix",
                          "loosen or delete an exclude rule, or add axis values")
    return Plan(matrix=matrix, groups=tuple(groups))
