"""Executors decide where a round's server groups run: ``local`` runs them here, one after another (the default);
``slurm`` runs each as a Slurm job (``harness.pipeline.slurm_rounds``). Both store results the same way, so the
rounds, pooling, parity judging and the report do not know which ran.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from harness.config import LocalExecutor
from harness.pipeline import run_progress
from harness.pipeline.launch import run_group
from harness.pipeline.start_ahead import StartedAhead, interleaved, pairs, start_pair
from harness.pipeline.work import GroupWork
from harness.plan import Plan
from harness.registry import Registry
from harness.store import Store

log = logging.getLogger(__name__)


class RoundExecutor(Protocol):
    local: bool
    """True when servers run on this machine (the machine-speed probe between rounds means something)."""

    def preflight(self) -> None:
        """Raise ConfigError for what the executor cannot run, before anything launches or is submitted."""

    async def run_round(self, work: Sequence[GroupWork], launch: int | None) -> None:
        """Run every group of one round; each cell's result is on disk when this returns. An executor that can
        tells ``harness.pipeline.run_progress.current()`` when each launch starts and ends; one that does not still
        has its round counted when it returns."""


class LocalRounds:
    """Every server group here, one after another, as a child process of the harness; with ``start_ahead``, two
    consecutive groups' servers start together and the second waits, frozen, for its turn
    (``harness.pipeline.start_ahead``)."""

    name = "local"
    local = True

    def __init__(self, plan: Plan, store: Store, source: str) -> None:
        self.plan, self.store = plan, store

    def preflight(self) -> None:
        pass

    async def run_round(self, work: Sequence[GroupWork], launch: int | None) -> None:
        progress = run_progress.current()
        matrix = self.plan.matrix
        together = isinstance(matrix.executor, LocalExecutor) and matrix.executor.start_ahead
        if together:
            work = interleaved(work)
        waiting: StartedAhead | None = None  # the next group's server, started beside this one's and frozen
        try:
            for index, item in enumerate(work, 1):
                mine, waiting = waiting, None
                following = work[index] if index < len(work) else None
                if mine is None and together and following is not None and pairs(item) and pairs(following):
                    mine, waiting = await start_pair(item, following, self.store, matrix)
                log.info("%sserver %d/%d %s: %d cells to run", "" if launch is None else f"launch {launch + 1}, ",
                         index, len(work), item.group.server.label, len(item.cells))
                if progress is not None:
                    progress.launch_started(item)
                results = await run_group(item, self.store, matrix, launch=launch, ahead=mine)
                if progress is not None:
                    wanted = {cell.cell_id for cell in item.cells}  # a search's probes are not counted cells
                    progress.launch_finished(item, sum(1 for result in results if result.cell_id in wanted))
        finally:
            if waiting is not None:  # the round ended before its turn (an error, Ctrl-C)
                await waiting.discard()


EXECUTORS: Registry[Callable[[Plan, Store, str], RoundExecutor]] = Registry("executor", "harness.executors")
"""What runs each ``executor.kind``'s rounds, by that kind (docs/extending/index.md); its settings are the config
model registered for that kind (``harness.config.executor.register_executor_model``)."""


def make_executor(plan: Plan, store: Store, source: str) -> RoundExecutor:
    """The executor the matrix names (``executor.kind``)."""
    return EXECUTORS.get(plan.matrix.executor.kind)(plan, store, source)
