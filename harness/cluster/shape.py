"""The resources one server group's job asks for: nodes per replica from the parallelism and ``gpus_per_node``,
GPUs per node, CPUs, memory and time, and the check that some partition can hold them before anything is
submitted. Jobs of equal shape go out as one array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.cluster.queue import Partition
from harness.config.executor import SlurmExecutor
from harness.config.hardware import GpuHardware
from harness.errors import ConfigError
from harness.plan.cells import ServerConfig


@dataclass(frozen=True, slots=True)
class JobShape:
    """What sbatch is asked for one server group; equal shapes share one array."""

    nodes: int
    ranks_per_node: int
    gpus_per_node: int  # 0 on CPU hardware
    cpus_per_task: int | None
    mem: str | None
    time_limit_min: int
    partition: str | None

    @property
    def label(self) -> str:
        gpus = f" x {self.gpus_per_node} GPU" if self.gpus_per_node else ""
        return f"{self.nodes} node{'s' if self.nodes > 1 else ''}{gpus}, {self.time_limit_min} min"


def job_shape(server: ServerConfig, executor: SlurmExecutor) -> JobShape:
    """The job one launch of ``server`` needs; a replica wider than a node spans ceil(ranks / per node) nodes. A
    deployment (``axes.topology``) runs all its servers in one job on one node."""
    hardware = server.hardware
    ranks = server.parallel.world_size
    if isinstance(hardware, GpuHardware):
        ranks = max(ranks, hardware.gpus_per_replica)
    if not server.topology.is_colocated:
        ranks *= server.topology.parts
        gpus = ranks if isinstance(hardware, GpuHardware) else 0
        return JobShape(nodes=1, ranks_per_node=ranks, gpus_per_node=gpus, cpus_per_task=executor.cpus_per_task,
                        mem=executor.mem, time_limit_min=executor.time_limit_min, partition=executor.partition)
    per_node = min(executor.gpus_per_node or ranks, ranks)
    nodes = math.ceil(ranks / per_node)
    gpus = per_node if isinstance(hardware, GpuHardware) else 0
    return JobShape(nodes=nodes, ranks_per_node=per_node, gpus_per_node=gpus, cpus_per_task=executor.cpus_per_task,
                    mem=executor.mem, time_limit_min=executor.time_limit_min, partition=executor.partition)


def check_shape(server: ServerConfig, shape: JobShape, found: list[Partition], source: str) -> None:
    """ConfigError when the replica cannot be split evenly over nodes, or no partition can hold the job."""
    ranks = shape.nodes * shape.ranks_per_node
    replica = max(server.parallel.world_size, getattr(server.hardware, "gpus_per_replica", 0))
    # a deployment's servers share one node (its GPUs are checked against the partitions below)
    if server.topology.is_colocated and ranks != replica:
        raise ConfigError(source, "executor.gpus_per_node",
                          f"{server.label}: {server.parallel.world_size} ranks do not split evenly over nodes of "
                          f"{shape.ranks_per_node}", "choose gpus_per_node that divides tp x dp")
    if shape.partition is not None:
        found = [p for p in found if p.name == shape.partition]
        if not found:
            raise ConfigError(source, "executor.partition", f"no partition named {shape.partition!r} on this "
                              "cluster", "pick one `sinfo -s` lists, or leave partition unset for the default")
    else:
        found = [p for p in found if p.default] or found
    for part in found:
        fits_gpus = shape.gpus_per_node <= part.gpus_per_node
        fits_cpus = shape.cpus_per_task is None or shape.cpus_per_task <= part.cpus_per_node
        if part.nodes >= shape.nodes and fits_gpus and fits_cpus:
            return
    have = "; ".join(f"{p.name}: {p.nodes} nodes x {p.gpus_per_node} GPU, {p.cpus_per_node} CPUs" for p in found)
    raise ConfigError(source, "executor", f"{server.label} needs {shape.label}"
                      + (f", {shape.cpus_per_task} CPUs" if shape.cpus_per_task else "")
                      + f" per node; no partition holds that ({have or 'no partitions'})",
                      "set executor.gpus_per_node to the nodes' GPU count, lower the parallelism, or pick a bigger "
                      "partition")
