"""The only package that knows the order of stages: matrix → plan (expand, vet; ``validate``: every check, once,
for every command) → fixtures → rounds of launches
(``rounds``: every server configuration once per round, the machine-speed probe between rounds) → per launch
(``launch``: warm-up, load, counters, telemetry, profile, SLO searches (``search``), parity) → each cell's launches
pooled → store.

Each server configuration is launched once per round and reused by every cell that differs only in client-side
settings. Completed launches are skipped unless forced. Cancellation (Ctrl-C, SIGTERM) unwinds through the
server's context manager, so no server outlives the run, and every finished launch is already on disk. Where a
round's groups run is the executor's choice (``executors``: here, or one Slurm job per group).

The names below are imported on first use: a Slurm job's driver imports ``slurm_job`` alone, without the report
stages ``rounds`` pulls in, because every job pays that import before its server starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.pipeline.launch import prompt_offset, run_cell, run_group
    from harness.pipeline.rounds import ensure_fixtures, render, run_plan
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

_EXPORTS = {"check_store_history": "validation", "load_plan": "validation", "preflight": "validation",
            "validate": "validation", "check_workloads": "validation", "deferred_workloads": "validation",
            "render": "rounds",
            "run_plan": "rounds", "ensure_fixtures": "rounds", "prompt_offset": "launch", "run_cell": "launch",
            "run_group": "launch", "with_probes": "search", "GroupWork": "work"}
__all__ = ["check_store_history", "check_workloads", "deferred_workloads", "ensure_fixtures", "GroupWork", "load_plan",
           "preflight", "prompt_offset", "render", "run_cell", "run_group", "run_plan", "validate", "with_probes"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"harness.pipeline.{_EXPORTS[name]}"), name)
