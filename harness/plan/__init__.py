"""The plan: a matrix expanded into cells grouped by the server each needs (``expand``, pure), and the recipe rules
that decide at plan time what cannot run (``rules``, with ``findings``). Launches nothing, imports no engine.
"""

from harness.plan.cells import MAX_RUNS, Cell, Plan, ServerConfig, ServerGroup, SloSearch
from harness.plan.expand import expand
from harness.plan.rules import vet

__all__ = [
    "Cell", "expand", "MAX_RUNS", "Plan", "ServerConfig", "ServerGroup", "SloSearch", "vet",
]
