"""The Slurm executor's controller: one job per server group's launch, submitted with submitit, same-shaped groups
as one job array capped at ``executor.max_parallel``, then watched until every job has a result or has left the
queue.

Resume relies on result files and the queue only (many clusters have no accounting): a rerun skips cells with
results (the rounds above), re-attaches to this run's jobs still queued or running (``slurm/jobs.json``), and
submits the rest. A job that fails, times out, is preempted or killed becomes the recorded failure of its cells
still without a result, with its log's tail; the matrix goes on. Ctrl-C cancels the jobs this controller is
waiting on (``scancel`` of their ids, never by user or name) and keeps every finished result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import submitit
from packaging.version import Version

from harness.cluster import JobShape, Partition, cancel, check_shape, job_shape, partitions, queued, require_commands
from harness.config import SlurmExecutor
from harness.errors import ConfigError
from harness.pipeline.launch import failed_result
from harness.pipeline.slurm_job import GroupJob, GroupJobResult, run_group_job
from harness.pipeline.work import GroupWork
from harness.plan import Plan, ServerConfig
from harness.servers import get_runtime, tail
from harness.store import Store, write_atomic

log = logging.getLogger(__name__)
GONE_POLLS = 3
"""Polls a job may be absent from the queue without a result before it counts as lost (its result file may be
written a moment after it leaves the queue)."""


@dataclass
class _Watched:
    job: submitit.Job[Any]
    payload: GroupJob
    submitted: float = 0.0
    gone: int = 0


class SlurmRounds:
    """Runs each round's server groups as Slurm jobs and waits for them."""

    name = "slurm"
    local = False

    def __init__(self, plan: Plan, store: Store, source: str) -> None:
        executor = plan.matrix.executor
        assert isinstance(executor, SlurmExecutor)
        self.plan, self.store, self.executor, self.source = plan, store, executor, source
        self.folder = Path(executor.folder) if executor.folder else store.slurm_dir
        self.shapes = {g.server.server_id: job_shape(g.server, executor) for g in plan.groups}

    def preflight(self) -> None:
        """Every check that needs the cluster, before anything is submitted: the Slurm commands, a partition that
        holds each job, and multi-node flags in the engine each multi-node replica runs."""
        require_commands(self.source)
        found: list[Partition] = partitions()
        for group in self.plan.groups:
            shape = self.shapes[group.server.server_id]
            check_shape(group.server, shape, found, self.source)
            if shape.nodes > 1:
                _check_multi_node(group.server, self.source)

    async def run_round(self, work: Sequence[GroupWork], launch: int | None) -> None:
        payloads = [self._payload(w, launch) for w in work]
        watched = self._attach(payloads)
        try:
            # _submit appends as it goes, so a submission failing half-way still cancels what went out
            self._submit([p for p in payloads if p.key not in {w.payload.key for w in watched}], watched)
            await self._wait(watched)
        except BaseException:
            # Ctrl-C, SIGTERM or a controller fault: cancel what this controller waits on; results stay on disk
            ids = [w.job.job_id for w in watched if not _has_result(w.job)]
            if ids:
                log.warning("cancelling %d Slurm job(s): %s", len(ids), " ".join(ids))
                cancel(ids)
            raise

    def _payload(self, work: GroupWork, launch: int | None) -> GroupJob:
        shape = self.shapes[work.group.server.server_id]
        return GroupJob(group=work.group, cells=tuple(work.cells), to_profile=tuple(work.to_profile),
                        decodings=tuple(work.decodings), matrix=self.plan.matrix, executor=self.executor,
                        store_root=str(self.store.dir.parent.resolve()), lock_dir=str(self.store.lock_dir.resolve()),
                        launch=launch, ranks_per_node=shape.ranks_per_node, searches=tuple(work.searches))

    # --- submission and re-attaching ------------------------------------------------------------------------
    def _attach(self, payloads: Sequence[GroupJob]) -> list[_Watched]:
        """This run's jobs still in the queue (a controller killed and rerun), matched by server and launch."""
        recorded = self._recorded()
        wanted = {p.key: p for p in payloads}
        mine = {job_id: key for job_id, key in recorded.items() if key in wanted}
        states = queued(mine)
        attached = []
        for job_id, key in mine.items():
            if job_id in states:
                log.info("re-attaching to Slurm job %s (%s, %s)", job_id, wanted[key].group.server.label,
                         states[job_id])
                attached.append(_Watched(submitit.SlurmJob(folder=self.folder / "%j", job_id=job_id), wanted[key]))
        return attached

    def _submit(self, payloads: Sequence[GroupJob], watched: list[_Watched]) -> None:
        by_shape: dict[JobShape, list[GroupJob]] = {}
        for payload in payloads:
            by_shape.setdefault(self.shapes[payload.group.server.server_id], []).append(payload)
        for shape, same in by_shape.items():
            executor = submitit.SlurmExecutor(folder=self.folder / "%j", python=self.executor.python or
                                              sys.executable)
            executor.update_parameters(**self._parameters(shape))
            with executor.batch():
                jobs = [executor.submit(run_group_job, payload) for payload in same]
            now = time.time()
            for job, payload in zip(jobs, same, strict=True):
                log.info("submitted Slurm job %s: %s (%s)", job.job_id, payload.group.server.label, shape.label)
                watched.append(_Watched(job, payload, submitted=now))
            self._record({w.job.job_id: w.payload.key for w in watched})

    def _parameters(self, shape: JobShape) -> dict[str, Any]:
        ex = self.executor
        extra: dict[str, Any] = {"nodes": shape.nodes, **ex.sbatch_args}
        params: dict[str, Any] = {
            "job_name": f"harness-{self.plan.matrix.name}", "time": shape.time_limit_min, "nodes": 1,
            "ntasks_per_node": 1, "use_srun": False, "array_parallelism": ex.max_parallel,
            "additional_parameters": extra,
            # the driver stops its servers on SIGTERM; Slurm sends it at the time limit, then SIGKILL after KillWait
            "signal_delay_s": 60,
        }
        for key, value in (("partition", shape.partition), ("account", ex.account), ("qos", ex.qos),
                           ("cpus_per_task", shape.cpus_per_task), ("mem", shape.mem),
                           ("gpus_per_node", shape.gpus_per_node or None)):
            if value is not None:
                params[key] = value
        return params

    def _file(self) -> dict[str, Any]:
        try:
            data = json.loads(self.store.slurm_jobs_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def _recorded(self) -> dict[str, str]:
        """Job id -> the server and launch it runs, for every job this run submitted."""
        return {str(k): str(v) for k, v in self._file().get("jobs", {}).items()}

    def _record(self, jobs: dict[str, str] | None = None, timing: dict[str, dict[str, float]] | None = None) -> None:
        data = self._file()
        data["jobs"] = {**data.get("jobs", {}), **(jobs or {})}
        data["timing"] = {**data.get("timing", {}), **(timing or {})}
        write_atomic(self.store.slurm_jobs_path, json.dumps(data, indent=2))

    # --- waiting --------------------------------------------------------------------------------------------
    async def _wait(self, watched: list[_Watched]) -> None:
        pending = list(watched)
        while pending:
            await asyncio.sleep(self.executor.poll_s)
            states = await asyncio.to_thread(queued, [w.job.job_id for w in pending])
            for item in list(pending):
                if _has_result(item.job):
                    pending.remove(item)
                    await asyncio.to_thread(self._collect, item)
                elif item.job.job_id not in states:
                    item.gone += 1
                    if item.gone >= GONE_POLLS:
                        pending.remove(item)
                        self._lost(item, "left the queue without a result (killed, timed out, preempted or its "
                                         "node failed)")

    def _collect(self, item: _Watched) -> None:
        collected = time.time()
        try:
            done: GroupJobResult = item.job.result()
            log.info("Slurm job %s finished: %d of %d cells ok", item.job.job_id, len(done.ok_cells),
                     len(item.payload.cells))
            # when the group ran beside when it was submitted and seen done: the controller's overhead
            self._record(timing={item.job.job_id: {"submitted": item.submitted, "started": done.started,
                                                   "finished": done.finished, "collected": collected}})
        except Exception as exc:  # the driver raised: the group's remaining cells fail with its traceback
            self._lost(item, f"failed: {str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}")

    def _lost(self, item: _Watched, what: str) -> None:
        """Record every cell of the job still without a result as failed, with the job's log tail."""
        job, payload = item.job, item.payload
        logs = "\n".join(t for t in (tail(Path(job.paths.stderr), 30), tail(Path(job.paths.stdout), 10)) if t)
        reason = f"Slurm job {job.job_id} {what}; logs: {job.paths.stderr}"
        log.error("%s: %s", payload.group.server.label, reason)
        for cell in payload.cells:
            existing = self.store.read_result(cell, payload.launch)
            if existing is None or existing.finished_at < _submitted_at(item):
                self.store.write_result(cell, failed_result(cell, reason, logs), payload.launch)


def _has_result(job: submitit.Job[Any]) -> bool:
    return Path(job.paths.result_pickle).exists()


def _submitted_at(item: _Watched) -> str:
    """Results older than the job's submission belong to an earlier run (a forced rerun clears launches)."""
    with contextlib.suppress(OSError):
        stamp = Path(item.job.paths.submitted_pickle).stat().st_mtime
        return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")
    return ""


def _check_multi_node(server: ServerConfig, source: str) -> None:
    """A replica across nodes needs an engine with multi-node flags, in the version the server runs."""
    runtime = get_runtime(server.runtime)
    if runtime.multi_node_since is None:
        raise ConfigError(source, "axes.parallel", f"{server.runtime} servers cannot span nodes in this harness",
                          "lower the parallelism to fit one node or raise executor.gpus_per_node")
    version = runtime.engine_version(server)
    if version is not None and Version(version) < Version(runtime.multi_node_since):
        raise ConfigError(source, f"runtimes.{server.runtime}.python",
                          f"{server.label} spans nodes, but {server.runtime} {version} has no multi-node flags "
                          f"(they arrived in {runtime.multi_node_since})",
                          f"point runtimes.{server.runtime}.python at an environment with {server.runtime} >= "
                          f"{runtime.multi_node_since}, or fit the replica on one node")
