"""The capstone end to end through the CLI, in-process (tests/support/cli.py), against the fake server
launched as a real subprocess.

run → report (verdict, frontiers, $/MTok, lock) → gate without a baseline (2) → baseline → gate (0) → a gated metric
made worse than the tolerance (1) → a cell that passed now failed (1) → a baseline of another matrix (2). The same
commands on a real vLLM CPU server are what `make bench` / `make regress` run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import cli

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: capstone
hardware: {{kind: cpu}}
slo: {{ttft_p99_ms: 2000, tpot_p50_ms: 50}}
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 16, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [fake]
  speculation: ["off", {{method: mtp, k: 2}}]
  concurrency: [1, 2]
server: {{startup_timeout_s: 60}}
gates: {{metrics: [output_throughput, tpot_ms.median]}}
"""


def harness(*args: str, out: Path, lock_dir: Path) -> subprocess.CompletedProcess[str]:
    return cli.harness(*args, "--out", out, "--lock-dir", lock_dir)  # in-process: the pipeline, not the executable


def _edit_summary(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if key in data["summary"]:
            data["summary"][key] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))


@pytest.fixture
def matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Path:
    return write_matrix(MATRIX.format(model=tiny_tokenizer_dir))


def test_capstone_run_report_baseline_and_gate(matrix: Path, tmp_path: Path) -> None:
    out, lock_dir = tmp_path / "reports", tmp_path / "lock"
    run = harness("run", str(matrix), "--launches", "3", out=out, lock_dir=lock_dir)  # a baseline needs three
    assert run.returncode == 0, run.stderr
    store = out / "capstone"
    report = (store / "report.md").read_text()
    assert "## Verdict" in report and "ship `m/fake/bf16/tp1/" in report
    # 12 requests (4 on each of 3 launches) cannot support a p99 claim; a median claim needs only 7
    assert "**insufficient samples** for a TTFT p99 claim" in report and "needs [459 requests](#a-slo-claims)" in report
    assert "a claim met on its requests ([0 of 12 over](#a-slo-claims)" in report
    assert "![Frontier: m · w](plots/frontier-m-w.png)" in report and (store / "plots" / "frontier-m-w.png").exists()
    # the CPU is priced as a CPU machine, never as a GPU
    assert "Priced as 1 × cpu (CPU machine) per replica" in report and "| tok/s/CPU machine |" in report
    lock = json.loads((store / "lock.json").read_text())
    commands = [s["command"] for s in lock["servers"].values()]
    assert len(commands) == 2 and all("--port <port>" in c and "harness_testing.fake_engine" in c for c in commands)
    assert {s["command_source"] for s in lock["servers"].values()} == {"log"}

    first = harness("gate", str(matrix), out=out, lock_dir=lock_dir)
    assert first.returncode == 2 and "no baseline at" in first.stderr

    promoted = harness("baseline", str(matrix), "--allow-dirty", out=out, lock_dir=lock_dir)
    assert promoted.returncode == 0, promoted.stderr
    assert (lock_dir / "capstone.baseline.json").exists() and (lock_dir / "capstone.lock.json").exists()

    # the run against itself: nothing regressed; a figure whose launch noise is wider than the tolerance on a busy
    # machine (the fake's MTP TPOT once reached ±6.4% beside a fixture build) is honestly inconclusive, not a pass
    passed = harness("gate", str(matrix), out=out, lock_dir=lock_dir)
    assert passed.returncode in (0, 3), passed.stdout + passed.stderr
    expected = "verdict: PASS" if passed.returncode == 0 else "verdict: INCONCLUSIVE (0 failing"
    assert expected in passed.stdout, passed.stdout
    assert f"report: {store / 'report.md'}" in passed.stdout

    # a gated metric made far worse than the tolerance: throughput halved in each launch of the cell whose launches
    # agreed best (a 20% drop read inconclusive once, and a halving once too, on a cell whose three launches spread
    # ±53% beside the engines lane: the fake's speed follows the machine's load)
    def spread(path: Path) -> float:
        values = [launch["output_throughput"] for launch in json.loads(path.read_text())["summary"]["repeats"]]
        return (max(values) - min(values)) / (sum(values) / len(values))

    steadiest = min(sorted((store / "runs").glob("*/summary.json")), key=spread)
    worse = json.loads(steadiest.read_text())
    launches = worse["summary"]["repeats"]
    _edit_summary(steadiest, summary={**worse["summary"], "repeats": [
        {**launch, "output_throughput": launch["output_throughput"] * 0.5} for launch in launches]})
    regressed = harness("gate", str(matrix), out=out, lock_dir=lock_dir)
    assert regressed.returncode == 1, regressed.stdout
    assert f"| regressed | {worse['label']} | output_throughput" in regressed.stdout
    assert "verdict: FAIL" in regressed.stdout
    rendered = harness("report", str(matrix), out=out, lock_dir=lock_dir)
    assert rendered.returncode == 0 and "**FAIL**" in (store / "report.md").read_text()

    # a cell that passed in the baseline and failed now
    _edit_summary(steadiest, summary=worse["summary"])
    other_cell = next(p for p in sorted((store / "runs").glob("*/summary.json")) if p != steadiest)
    _edit_summary(other_cell, status="failed", reason="server exited while the cell ran", summary=None)
    failed = harness("gate", str(matrix), out=out, lock_dir=lock_dir)
    assert failed.returncode == 1 and "| failed |" in failed.stdout

    # a baseline of another matrix is refused, not compared
    other = json.loads((lock_dir / "capstone.baseline.json").read_text())
    other["matrix"] = "someone-else"
    (tmp_path / "other.json").write_text(json.dumps(other))
    refused = harness("gate", str(matrix), "--baseline", str(tmp_path / "other.json"), out=out, lock_dir=lock_dir)
    assert refused.returncode == 2 and "is the baseline of matrix 'someone-else', not 'capstone'" in refused.stderr
