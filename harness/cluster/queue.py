"""What the controller asks Slurm directly, as argv lists: which of its jobs are still queued or running
(``squeue``), cancelling its own jobs (``scancel`` of ids it submitted), and what the partitions can hold
(``sinfo``), so that a job no node can run fails before it is submitted.

Resume and fault detection read the queue and result files only, never accounting: many clusters run without
``slurmdbd``, and then ``sacct`` fails (docs/slurm.md, "How it runs").
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import ClusterError, ConfigError

CLIENT_COMMANDS = ("sbatch", "squeue", "scancel", "sinfo", "srun", "scontrol")


def require_commands(source: str) -> None:
    """Raise before anything is submitted when this machine has no Slurm client."""
    missing = [c for c in CLIENT_COMMANDS if shutil.which(c) is None]
    if missing:
        raise ConfigError(source, "executor.kind", f"slurm commands not found on this machine: {', '.join(missing)}",
                          "run the harness on the cluster's login node (where sbatch works), install the Slurm "
                          "client (Debian: apt-get install slurm-client), or use executor: {kind: local}")


def _run(argv: list[str], timeout_s: float = 30) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{argv[0]} failed: {exc}") from exc
    if out.returncode != 0:
        raise ClusterError(f"{' '.join(argv)} exited {out.returncode}: {out.stderr.strip()[-500:]}")
    return out.stdout


def queued(job_ids: Iterable[str]) -> dict[str, str]:
    """Job id -> state (PENDING, RUNNING, COMPLETING, ...) for those of ``job_ids`` still in the queue; array tasks
    are listed as ``<array>_<task>``."""
    ids = sorted({j.split("_")[0] for j in job_ids})
    if not ids:
        return {}
    text = _run(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(ids)])
    states = {}
    for line in text.splitlines():
        job, _, state = line.partition("|")
        states[job.strip()] = state.strip()
    return states


def cancel(job_ids: Iterable[str]) -> None:
    """scancel the given jobs (the controller's own ids only, never by user or name)."""
    ids = sorted(set(job_ids))
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=30, check=False)


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: int
    cpus_per_node: int
    gpus_per_node: int
    default: bool


def partitions() -> list[Partition]:
    """The cluster's partitions with their node count and the smallest node's CPUs and GPUs."""
    text = _run(["sinfo", "-h", "-N", "-o", "%P|%N|%c|%G"])
    seen: dict[str, dict[str, object]] = {}
    for line in text.splitlines():
        part, node, cpus, gres = (f.strip() for f in line.split("|"))
        default = part.endswith("*")
        name = part.rstrip("*")
        entry = seen.setdefault(name, {"nodes": set(), "cpus": None, "gpus": None, "default": default})
        nodes = entry["nodes"]
        assert isinstance(nodes, set)
        nodes.add(node)
        gpus = _gpus(gres)
        entry["cpus"] = min(int(cpus), entry["cpus"]) if isinstance(entry["cpus"], int) else int(cpus)
        entry["gpus"] = min(gpus, entry["gpus"]) if isinstance(entry["gpus"], int) else gpus
    return [Partition(name, len(e["nodes"]), int(e["cpus"]), int(e["gpus"]), bool(e["default"]))  # type: ignore[arg-type, call-overload]
            for name, e in seen.items()]


def _gpus(gres: str) -> int:
    """GPUs in a sinfo GRES field such as ``gpu:4``, ``gpu:h100:8(S:0-1)`` or ``(null)``."""
    total = 0
    for item in gres.split(","):
        fields = item.split("(")[0].split(":")
        if fields[0] == "gpu" and fields[-1].isdigit():
            total += int(fields[-1])
    return total
