"""Slurm as the harness needs it: the resources of a server group's job (``shape``), where a launch's processes
run inside a job (``placement``), the queue read and written as argv lists (``queue``), and a real Slurm cluster
on this machine for ``make bench-slurm`` and the tests (``local``). Submission itself is submitit's
(``harness.pipeline.slurm_rounds``)."""

from harness.cluster.local import local_cluster
from harness.cluster.placement import Placement
from harness.cluster.queue import Partition, cancel, partitions, queued, require_commands
from harness.cluster.shape import JobShape, check_shape, job_shape

__all__ = [
    "cancel", "check_shape", "job_shape", "JobShape", "local_cluster", "Partition", "partitions", "Placement",
    "queued", "require_commands",
]
