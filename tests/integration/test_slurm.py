"""The Slurm executor on a real 2-node Slurm cluster started on this machine (Debian's slurmctld, slurmd, munge).

The fake engine makes the cluster's faults cheap to provoke: a controller killed mid-run and rerun, a job
cancelled mid-cell, Ctrl-C. A real vLLM CPU group runs through the same path in test_vllm_cpu.py's neighbour
below. After each test no job is queued and no server process is left on any node.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.cluster.local import LocalCluster, local_cluster

from tests.support import cli
from tests.support.engines import NEEDS_VLLM
from tests.support.matrices import ENGINE_CHECKS
from tests.support.processes import live_pids

pytestmark = pytest.mark.cluster

FAKE = """
name: fake
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [fake]
  speculation: ["off", {{method: mtp, k: 2}}]
  concurrency: [1, 2, 3]
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: [{extra}]}}}}
executor: {{kind: slurm, poll_s: 0.3{executor}}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("slurm"), nodes=2, gpus=4) as running:
        yield running


@pytest.fixture(autouse=True)
def nothing_left_behind(cluster: LocalCluster) -> Iterator[None]:
    yield
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (squeue() or live_pids("harness_testing.fake_engine")):
        time.sleep(0.2)
    assert not squeue(), "a job outlived its test"
    assert not live_pids("harness_testing.fake_engine"), "a server outlived its test"


def squeue() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[:-1]


@pytest.fixture
def fake_matrix(write_matrix: Callable[[str], Path], tiny_tokenizer_dir: Path) -> Callable[..., Path]:
    def write(extra: str = "", executor: str = "") -> Path:
        return write_matrix(FAKE.format(model=tiny_tokenizer_dir, extra=extra, executor=executor))
    return write


def harness(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    return cli.harness(*args, "--out", out)  # in-process; what kills or interrupts the harness starts it (start)


def results(out: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    found = {}
    for path in sorted((out / "fake" / "runs").glob("*/summary.json")):
        data = json.loads(path.read_text())
        found[data["label"]] = data
    return found


def jobs(out: Path) -> dict[str, str]:
    path = out / "fake" / "slurm" / "jobs.json"
    return json.loads(path.read_text())["jobs"] if path.exists() else {}


def start(matrix: Path, out: Path) -> subprocess.Popen[str]:
    # the disposition of a process started at a terminal (a background shell ignores SIGINT in its children)
    return subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for(ready: Callable[[], object], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_matrix_runs_as_one_job_array_and_reports_as_locally(fake_matrix: Callable[..., Path],
                                                               tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = harness("run", str(fake_matrix()), out=out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "6 cells run, 0 failed" in done.stdout
    found = results(out)
    assert len(found) == 6 and all(r["status"] == "ok" for r in found.values())
    submitted = jobs(out)
    assert len(submitted) == 2 and len({j.split("_")[0] for j in submitted}) == 1  # one array of two tasks
    assert "| m | fake | bf16 |" in (out / "fake" / "report.md").read_text()
    again = harness("run", str(fake_matrix()), out=out)
    assert "0 cells run, 0 failed, 6 already complete" in again.stdout and jobs(out) == submitted


def test_a_replica_spans_two_nodes_with_a_step_on_each(write_matrix: Callable[[str], Path], tiny_tokenizer_dir: Path,
                                                       tmp_path: Path) -> None:
    text = FAKE.format(model=tiny_tokenizer_dir, extra="", executor=", gpus_per_node: 1").replace(
        'speculation: ["off", {method: mtp, k: 2}]', 'speculation: ["off"]\n  parallel: [{dp: 2}]')
    out = tmp_path / "reports"
    done = harness("run", str(write_matrix(text)), out=out)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = out / "fake" / "servers"
    head = next(logs.glob("*/server.log")).read_text()
    follower = next(logs.glob("*/node1.log")).read_text()
    assert "rank 0 of 2 on node node1" in head and "--nnodes 2 --node-rank 0" in head
    assert "rank 1 of 2 on node node2" in follower and "--nodelist=node2" in follower


def test_a_killed_controller_reattaches_to_its_running_jobs(fake_matrix: Callable[..., Path],
                                                            tmp_path: Path) -> None:
    out, matrix = tmp_path / "reports", fake_matrix('"--itl-ms", "60"')
    controller = start(matrix, out)
    wait_for(lambda: len(jobs(out)) == 2 and any("RUNNING" in line for line in squeue()))
    controller.kill()  # no cleanup at all: the jobs keep running
    controller.wait()
    submitted = jobs(out)
    assert len(squeue()) == 2
    resumed = harness("run", str(matrix), out=out)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert resumed.stderr.count("re-attaching to Slurm job") == 2
    assert jobs(out) == submitted  # nothing was submitted twice
    assert all(r["status"] == "ok" for r in results(out).values()) and len(results(out)) == 6


def test_a_job_cancelled_mid_cell_fails_its_cells_and_the_matrix_goes_on(fake_matrix: Callable[..., Path],
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "reports"
    controller = start(fake_matrix('"--itl-ms", "60"', ", max_parallel: 1"), out)
    wait_for(lambda: any(r["status"] == "ok" for r in results(out).values()))
    first = min(jobs(out))  # task 0 runs first under max_parallel 1
    subprocess.run(["scancel", first], check=True)
    stdout, stderr = controller.communicate(timeout=120)
    assert controller.returncode == 1, stderr[-3000:]
    found = results(out)
    failed = {label: r for label, r in found.items() if r["status"] == "failed"}
    assert failed and all(f"Slurm job {first}" in r["reason"] for r in failed.values())
    assert sum(r["status"] == "ok" for r in found.values()) >= 4  # the other group ran after it
    assert "cells run" in stdout


def test_ctrl_c_cancels_only_its_own_jobs(fake_matrix: Callable[..., Path], tmp_path: Path) -> None:
    foreign = subprocess.run(["sbatch", "--parsable", "--job-name=someone-else", "--output=/dev/null", "--wrap",
                              "sleep 120"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        out = tmp_path / "reports"
        controller = start(fake_matrix('"--itl-ms", "60"'), out)
        wait_for(lambda: sum("harness-fake" in line and "RUNNING" in line for line in squeue()) == 2)
        controller.send_signal(signal.SIGINT)
        _, stderr = controller.communicate(timeout=60)
        assert controller.returncode == 130, stderr[-3000:]
        wait_for(lambda: not any("harness-fake" in line for line in squeue()), 30)
        assert any(line.startswith(foreign) for line in squeue())
    finally:
        subprocess.run(["scancel", foreign], check=False)


def test_unsatisfiable_jobs_fail_before_anything_is_submitted(fake_matrix: Callable[..., Path],
                                                              tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = harness("run", str(fake_matrix("", ", partition: gpu-xl")), out=out)
    assert done.returncode == 2 and "no partition named 'gpu-xl'" in done.stderr and "fix:" in done.stderr
    assert not jobs(out)


def test_without_slurm_commands_the_error_names_the_fix(fake_matrix: Callable[..., Path], tmp_path: Path) -> None:
    done = cli.harness("run", fake_matrix(), "--out", tmp_path, env={"PATH": str(Path(sys.executable).parent)})
    assert done.returncode == 2 and "slurm commands not found" in done.stderr and "executor.kind" in done.stderr


VLLM = """
name: vllm-slurm
hardware: {{kind: cpu, kv_cache_gib: 0.5}}
models:
  qwen3: {{id: "fixture:tiny-qwen3-recall", max_model_len: 512,
          checkpoints: {{int8: "fixture:tiny-qwen3-recall-w8a8"}}}}
workloads:
  w: {{kind: random, input_tokens: 64, output_tokens: 16, num_requests: 8, warmup_requests: 1}}
axes:
  precision: [int8]
  concurrency: [1, 4]
{extra}
executor: {{kind: slurm, poll_s: 0.5{executor}}}
""" + ENGINE_CHECKS.replace("{", "{{").replace("}", "}}")


@pytest.mark.integration
@NEEDS_VLLM
@pytest.mark.fixtures("tiny-qwen3-recall", "tiny-qwen3-recall-w8a8")
def test_a_real_vllm_cpu_group_runs_as_a_slurm_job(write_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    """The Slurm executor's job runs a real vLLM group through the same pipeline as a local run, and vLLM serves the
    instrument's int8 W8A8 export on its own int8 kernels.

    Launches: one vLLM server on tiny-qwen3-recall-w8a8 inside a Slurm job (the job's own launch is what is tested,
    so a server started by the test could not stand in), and the module's 2-node Slurm cluster, shared by its tests.
    The int8 export's only launch in make test (the evidence test serves bf16 and int2; make bench judges int8's
    parity): the recall instrument's, which the parity tests serve anyway, so make test trains no other model.
    """
    from harness.fixtures import build_fixtures

    build_fixtures(["tiny-qwen3-recall-w8a8"])  # before the run, so its timeout covers the Slurm job, not the build
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(write_matrix(VLLM.format(extra="",
                           executor=""))), "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = [json.loads(p.read_text()) for p in (out / "vllm-slurm" / "runs").glob("*/summary.json")]
    assert len(found) == 2 and all(r["status"] == "ok" and r["summary"]["completed"] == 8 for r in found)
    log = next((out / "vllm-slurm" / "servers").glob("*/server.log")).read_text()
    assert "vllm.entrypoints.openai.api_server" in log
    assert "Selected CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8" in log  # vLLM's int8 kernel
    assert not live_pids("vllm.entrypoints.openai.api_server")
