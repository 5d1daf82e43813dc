"""A real Slurm cluster on this machine: munged, slurmctld and N slurmd daemons pretending to be N nodes with fake
GPUs, started as child processes in the foreground and stopped on every exit path.

It is what ``make bench-slurm`` and the Slurm tests run against: Debian's own Slurm (``slurmctld``, ``slurmd``,
``slurm-client``, ``munge``), not a simulation, configured as Slurm's ``slurm.conf(5)`` and ``gres.conf(5)``
describe; each trap met on these machines is commented where it is avoided. Daemons run in the foreground
(``-D``, ``-F``) because background daemons are not reaped on these machines; a private munged socket and key keep
it apart from any system munge. Every node is 127.0.0.1, so per-rank ports of a multi-node replica must differ
(the driver picks free ones).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from harness.errors import ClusterError

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "srun", "scontrol")
INSTALL_FIX = ("install them: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge "
               "(`make setup` does)")


def _conf(root: Path, nodes: int, gpus: int, cpus: int, port: int) -> str:
    host = socket.gethostname().split(".")[0]
    last = nodes
    return f"""ClusterName=harnesslocal
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge.sock
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/state/d-%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
NodeName=node[1-{last}] NodeHostname={host} NodeAddr=127.0.0.1 Port=[{port + 1}-{port + nodes}] CPUs={cpus} \
RealMemory=4000 Gres=gpu:{gpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class LocalCluster:
    """``with LocalCluster(root, nodes=2, gpus=4) as cluster:`` -> ``cluster.env`` has the SLURM_CONF to use."""

    def __init__(self, root: Path, nodes: int = 2, gpus: int = 4, cpus: int = 8, port: int = 16817) -> None:
        self.root, self.nodes, self.gpus, self.cpus, self.port = root.resolve(), nodes, gpus, cpus, port
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def __enter__(self) -> LocalCluster:
        missing = [d for d in DAEMONS if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
        if missing:
            raise ClusterError(f"the local Slurm cluster needs {', '.join(missing)}; fix: {INSTALL_FIX}")
        if os.geteuid() != 0:
            raise ClusterError("the local Slurm cluster needs root (its slurmd daemons run jobs as any user and "
                               "its fake GPUs are device nodes); fix: run as root, or point the harness at a real "
                               "cluster (executor: {kind: slurm} on its login node)")
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, argv: list[str], log_name: str) -> None:
        log = (self.root / "log" / log_name).open("ab")
        env = {**os.environ, **self.env}
        self._procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True))
        log.close()

    def _start(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)  # a previous cluster's state (jobs, nodes) must not come back
        for sub in ("state", "log", "run", "gpu", "munge"):
            (self.root / sub).mkdir(parents=True)
        for n in range(1, self.nodes + 1):
            (self.root / "state" / f"d-node{n}").mkdir()
        for g in range(self.gpus):  # character devices: plain files are refused and count as missing GPUs
            os.mknod(self.root / "gpu" / f"nvidia{g}", 0o600 | 0o020000, os.makedev(1, 3))
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(_conf(self.root, self.nodes, self.gpus, self.cpus, self.port))
        (self.root / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName=node[1-{self.nodes}] Name=gpu File={self.root}/gpu/nvidia[0-{self.gpus - 1}]\n")
        sock = self.root / "munge.sock"
        self._spawn([_sbin("munged"), "-F", "--force", f"--socket={sock}", f"--key-file={key}",
                     f"--pid-file={self.root / 'munge' / 'munged.pid'}", f"--seed-file={self.root / 'munge' / 'seed'}",
                     f"--log-file={self.root / 'log' / 'munged.log'}"], "munged.out")
        _wait(lambda: sock.exists(), 10, "munged did not create its socket", self.root / "log" / "munged.out")
        self._spawn([_sbin("slurmctld"), "-D", "-c", "-f", str(self.conf)], "slurmctld.out")
        for n in range(1, self.nodes + 1):
            self._spawn([_sbin("slurmd"), "-D", "-f", str(self.conf), "-N", f"node{n}"], f"slurmd-node{n}.out")
        _wait(self._idle, 30, "the local cluster's nodes did not become idle", self.root / "log" / "slurmctld.log")

    def _idle(self) -> bool:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env={**os.environ,
                                                                                            **self.env})
        return out.returncode == 0 and set(out.stdout.split()) == {"idle"}

    def stop(self) -> None:
        """Cancel every job, then stop the Slurm daemons before munged (they need it to shut down cleanly)."""
        if not self._procs:
            return
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["scancel", "--full", "--user", str(os.getuid())], env={**os.environ, **self.env},
                           capture_output=True, timeout=10)
        for proc in reversed(self._procs):  # slurmd, slurmctld, then munged
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs.clear()


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _wait(ready: object, timeout_s: float, problem: str, log: Path) -> None:
    assert callable(ready)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise ClusterError(f"{problem} within {timeout_s:.0f} s; its log ({log}) ends:\n{tail}")


@contextlib.contextmanager
def local_cluster(root: Path, nodes: int = 2, gpus: int = 4) -> Iterator[LocalCluster]:
    """The cluster, with ``SLURM_CONF`` exported to this process (and so to every Slurm command it runs)."""
    with LocalCluster(root, nodes=nodes, gpus=gpus) as cluster:
        before = os.environ.get("SLURM_CONF")
        os.environ.update(cluster.env)
        try:
            yield cluster
        finally:
            if before is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = before
