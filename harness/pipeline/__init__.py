"""The only package that knows the order of stages: matrix → plan (expand, vet; ``validate``: every check, once,
for every command) → fixtures → rounds of launches
(``rounds``: every server configuration once per round, the machine-speed probe between rounds) → per launch
(``launch``: warm-up, load, counters, telemetry, profile, SLO searches (``search``), parity) → each cell's launches
pooled → store.

Each server configuration is launched once per round and reused by every cell that differs only in client-side
settings. Completed launches are skipped unless forced. Cancellation (Ctrl-C, SIGTERM) unwinds through the
server's context manager, so no server outlives the run, and every finished launch is already on disk. Where a
round's groups run is the executor's choice (``executors``: here, or one Slurm job per group).
"""

import typing as _typing

from harness.pipeline.deployment_preflight import read_deployments
from harness.pipeline.launch import prompt_offset, run_cell, run_group
from harness.pipeline.search import with_probes
from harness.pipeline.validation import (
    check_store_history,
    check_workloads,
    deferred_workloads,
    load_plan,
    preflight,
    validate,
)
from harness.pipeline.work import GroupWork

if _typing.TYPE_CHECKING:
    from harness.pipeline.rounds import ensure_fixtures, render, run_plan
else:
    def __getattr__(name: str) -> object:
        """The rounds' names, imported on first use (PEP 562): the rounds bring the report's renderer, the verdict,
        the predictors and the fixtures' builder, which ``load_plan`` and ``validate`` (every command) do not need."""
        if name not in ("ensure_fixtures", "render", "run_plan"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from harness.pipeline import rounds

        value = getattr(rounds, name)
        globals()[name] = value
        return value

__all__ = ["check_store_history", "check_workloads", "deferred_workloads", "ensure_fixtures", "GroupWork", "load_plan",
           "preflight", "prompt_offset", "read_deployments", "render", "run_cell", "run_group",
           "run_plan", "validate", "with_probes"]
