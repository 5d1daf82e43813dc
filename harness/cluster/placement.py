"""Where one launch's engine processes run inside a Slurm job, and the server object that starts them there.

The job's driver runs on the allocation's first node, so the head rank (the one that serves HTTP) runs beside
it and the load client reaches it on the loopback, exactly as locally. Every other node gets one engine process
started with ``srun --overlap -N1 --nodelist=<node>`` (a job step inside the running job), with that node's rank
flags from the runtime adapter, and its own log in the server's folder. A ``CompositeServer`` starts the
followers first, then the head, and is ready when the head's ``/health`` answers; on every exit path it stops the
head and then every follower (stopping ``srun`` ends its step on the remote node; Slurm also reaps every step when
the job ends).
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.config.executor import SlurmExecutor
from harness.errors import ClusterError
from harness.plan.cells import ServerConfig
from harness.servers.composite import CompositeServer
from harness.servers.process import LaunchSpec, ServerProcess, free_port
from harness.servers.runtime import NodeRank, resolve_model_path
from harness.servers.runtime_lookup import get_runtime


@dataclass(frozen=True, slots=True)
class Placement:
    """The running job's nodes (the first is the head, where the driver runs) and how to start a step on one."""

    job_id: str
    nodes: tuple[str, ...]
    head_addr: str
    container_image: str | None = None
    container_mounts: tuple[str, ...] = ()
    srun_args: tuple[str, ...] = ()
    ranks_per_node: int = 1

    @classmethod
    def from_job(cls, executor: SlurmExecutor, ranks_per_node: int = 1) -> Placement:
        """Read the allocation from the job's environment (``SLURM_JOB_ID``, ``SLURM_JOB_NODELIST``)."""
        job_id = os.environ.get("SLURM_JOB_ID")
        nodelist = os.environ.get("SLURM_JOB_NODELIST")
        if not job_id or not nodelist:
            raise ClusterError("not inside a Slurm job: SLURM_JOB_ID or SLURM_JOB_NODELIST is unset")
        nodes = tuple(_scontrol(["show", "hostnames", nodelist]).split())
        return cls(job_id=job_id, nodes=nodes, head_addr=node_address(nodes[0]),
                   container_image=executor.container_image, container_mounts=executor.container_mounts,
                   srun_args=executor.srun_args, ranks_per_node=ranks_per_node)

    def srun(self, node: str, spec: LaunchSpec) -> LaunchSpec:
        """``spec`` run as a job step on ``node`` (an argv list: srun's options, then the engine's own argv)."""
        argv = ["srun", "--overlap", f"--jobid={self.job_id}", "--nodes=1", "--ntasks=1", f"--nodelist={node}",
                "--kill-on-bad-exit=1", "--unbuffered"]
        if self.container_image:
            argv.append(f"--container-image={self.container_image}")
            if self.container_mounts:
                argv.append(f"--container-mounts={','.join(self.container_mounts)}")
        return LaunchSpec(argv=(*argv, *self.srun_args, *spec.argv), env=spec.env, health_path=spec.health_path)

    def server(self, server: ServerConfig, spec: LaunchSpec, port: int, log_path: Path) -> ServerProcess:
        """The server of one launch: one process on this node, or a replica spanning every node of the job."""
        timeout = server.settings.startup_timeout_s
        host = server.settings.host
        if len(self.nodes) == 1:
            head = self.srun(self.nodes[0], spec) if self.container_image else spec
            return ServerProcess(head, host, port, log_path, timeout)
        runtime = get_runtime(server.runtime)
        model_path, rendezvous = resolve_model_path(server), free_port()
        specs = [runtime.node_launch_spec(server, model_path, port, NodeRank(
            rank=rank, nodes=len(self.nodes), head_addr=self.head_addr, rendezvous_port=rendezvous,
            ranks_per_node=self.ranks_per_node)) for rank in range(len(self.nodes))]
        head = self.srun(self.nodes[0], specs[0]) if self.container_image else specs[0]
        followers = [ServerProcess(self.srun(node, s), host, port, log_path.with_name(f"node{rank}.log"), timeout)
                     for rank, (node, s) in enumerate(zip(self.nodes, specs, strict=True)) if rank]
        return CompositeServer(head, followers, host, port, log_path, timeout)


def node_address(node: str) -> str:
    """The address other nodes reach ``node`` at: its NodeAddr in Slurm (127.0.0.1 on the local cluster)."""
    text = _scontrol(["show", "node", node])
    for field in text.split():
        if field.startswith("NodeAddr="):
            addr = field.removeprefix("NodeAddr=")
            try:
                return socket.gethostbyname(addr)
            except OSError:
                return addr
    raise ClusterError(f"scontrol show node {node} printed no NodeAddr")


def _scontrol(args: list[str]) -> str:
    out = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise ClusterError(f"scontrol {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return out.stdout
