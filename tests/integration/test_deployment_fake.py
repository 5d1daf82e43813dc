"""Deployments of several fake servers behind the real vllm-router: replicas and prefill/decode run end to end,
each part keeps its log, and nothing is left behind after a normal run, a part dying mid-cell, or Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: topo
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 6, warmup_requests: 1}}
axes:
  runtime: [fake]
  topology: [colocated, {{replicas: 2}}, {{prefill: 1, decode: 1}}]
  concurrency: [1, 2]
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: [{extra}]}}}}
"""


@pytest.fixture
def matrix(write_matrix: Callable[[str], Path], tiny_tokenizer_dir: Path) -> Callable[[str], Path]:
    return lambda extra="": write_matrix(MATRIX.format(model=tiny_tokenizer_dir, extra=extra))


def results(out: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    return {d["label"]: d for d in (json.loads(p.read_text()) for p in (out / "topo" / "runs").glob("*/summary.json"))}


def leftovers() -> list[int]:
    return live_pids("harness_testing.fake_engine") + live_pids("vllm_router.launch_router")


def run(matrix: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return cli.harness("run", matrix, "--out", out)  # in-process; Ctrl-C below runs the real executable


def test_replicas_and_prefill_decode_run_end_to_end(matrix: Callable[[str], Path], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = run(matrix(""), out)
    assert done.returncode == 0, done.stderr[-3000:]
    found = results(out)
    assert len(found) == 6 and all(r["status"] == "ok" and r["summary"]["completed"] == 6 for r in found.values())
    servers = (out / "topo" / "servers").glob("*/server.log")
    logs = {p.parent.name: {f.name for f in p.parent.iterdir()} for p in servers}
    assert sorted(map(sorted, logs.values())) == [["decode0.log", "prefill0.log", "server.log"],
                                                  ["replica0.log", "replica1.log", "server.log"], ["server.log"]]
    prefill = next((out / "topo" / "servers").glob("*/prefill0.log")).read_text()
    assert "kv_producer" in prefill and "max_tokens=1 stream=False" in prefill  # the router's prefill leg
    replicas = [p.read_text().count("request ") for p in (out / "topo" / "servers").glob("*/replica*.log")]
    assert all(n > 0 for n in replicas)  # round robin reached both
    assert "/r2" in (out / "topo" / "report.md").read_text()
    assert not leftovers()


def test_a_part_that_dies_fails_its_cell_and_the_matrix_goes_on(matrix: Callable[[str], Path],
                                                                tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = run(matrix('"--die-after-requests", "5"'), out)
    assert done.returncode == 1, done.stderr[-3000:]
    found = results(out)
    assert len(found) == 6
    died = [r for label, r in found.items() if r["status"] == "failed" and "/r2/" in label]
    assert died and "exited while the cell ran" in died[0]["reason"]
    assert not leftovers()


def test_ctrl_c_leaves_no_part_behind(matrix: Callable[[str], Path], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix('"--itl-ms", "60"')), "--out",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not live_pids("vllm_router.launch_router") and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-3000:]
    assert not leftovers()
