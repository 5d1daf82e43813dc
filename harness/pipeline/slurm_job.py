"""What runs inside one Slurm job: the driver of one server group's launch, on the allocation's first node.

submitit pickles a ``GroupJob`` and calls ``run_group_job`` in the job. The driver reads its nodes from the job's
environment, then runs the group exactly as the local path does (``run_group``: warm-up, load, counters, parity,
profile), writing every result atomically into the shared results folder as it finishes. SIGTERM (``scancel``,
the time limit, preemption) cancels it like Ctrl-C, so the servers on every node are stopped before the job ends;
what finished is already on disk.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import Placement
from harness.config import Matrix, SlurmExecutor
from harness.pipeline.launch import run_group
from harness.pipeline.work import GroupWork
from harness.plan import Cell, ServerGroup, SloSearch
from harness.store import Store


@dataclass(frozen=True, slots=True)
class GroupJob:
    """One server group's launch, as the controller hands it to a job (pickled by submitit)."""

    group: ServerGroup
    cells: tuple[Cell, ...]
    to_profile: tuple[Cell, ...]
    decodings: tuple[str, ...]
    matrix: Matrix
    executor: SlurmExecutor
    store_root: str
    lock_dir: str
    launch: int | None
    ranks_per_node: int
    searches: tuple[SloSearch, ...] = ()

    @property
    def key(self) -> str:
        """Which launch of which server this job runs: what resume matches a queued job on."""
        return f"{self.group.server.server_id}/{'-' if self.launch is None else self.launch}"


@dataclass(frozen=True, slots=True)
class GroupJobResult:
    """What a job hands back: its cells that finished ok, and when the driver started and ended (epoch seconds),
    which is the group's own run time beside the controller's overhead (docs/slurm/slurm_scale.py)."""

    ok_cells: tuple[str, ...]
    started: float
    finished: float


def run_group_job(job: GroupJob) -> GroupJobResult:
    """The job's entry point: run the group, return the ids of its cells that finished ok."""
    started = time.time()
    logging.basicConfig(level=os.environ.get("HARNESS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    placement = Placement.from_job(job.executor, job.ranks_per_node)
    store = Store(Path(job.store_root), job.matrix.name, Path(job.lock_dir))

    async def main() -> tuple[str, ...]:
        task = asyncio.current_task()
        assert task is not None
        # submitit's own SIGTERM handler only logs; the servers must be stopped before Slurm's SIGKILL
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        work = GroupWork(job.group, job.cells, job.to_profile, job.decodings, job.searches)
        results = await run_group(work, store, job.matrix, launch=job.launch, placement=placement)
        return tuple(r.cell_id for r in results if r.status == "ok")

    ok = asyncio.run(main())
    return GroupJobResult(ok_cells=ok, started=started, finished=time.time())
