"""SLO search and agent sessions through the whole pipeline, in-process, against the fake server launched as a
subprocess.

The fake server's latency curve is known: every decode step costs ``--itl-ms`` plus ``--itl-per-active-ms`` per
stream in flight, so at concurrency c the median TPOT is about 12 + 4c ms, and an SLO of TPOT p50 <= 54 ms is met
up to c = 10 (the knee). The search must land within one probe of it, reuse the grid's cell on its way, store every
probe as a cell, resume without measuring anything again, and show its probes and answer in the report.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

SEARCH_MATRIX = """
name: search
slo: {{tpot_p50_ms: 54}}
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 40, num_requests: 8, warmup_requests: 0}}
  agent: {{kind: agent, num_requests: 4, turns: {{min: 2, max: 3}}, system_prompt_tokens: 20, tools: 2,
          user_tokens: 4, tool_result_tokens: 6, output_tokens: 6, warmup_requests: 0}}
axes:
  runtime: [fake]
  concurrency: [4, {{search: slo, min: 1, max: 64, max_probes: 10}}]
exclude:
  - {{workload: agent, concurrency: search}}
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: ["--ttft-ms", "2", "--itl-ms", "12", "--itl-per-active-ms", "4"]}}}}
"""
# TPOT = 12 + 4 x active ms: the knee is 10 (52 ms; 11 gives 56). A busy machine only adds delay, so the answer stays
# within 9..11 while it adds less than 6 ms at the median (at 1 ms per active request the margin was 0.5 ms). The 12
# ms base keeps each doubling of concurrency worth 25-43% more throughput up to the knee: on a base of 2 ms it was
# 11% from c=2 to 4 when quiet, and beside make test's engines the fake gained 4% there, which the search's 5%
# saturation rule read as a saturated server (it stopped at 4, 2026-11-27).


def harness(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    return cli.harness(*args, "--out", out)  # in-process: the pipeline, not the executable


@pytest.fixture
def search_matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Path:
    return write_matrix(SEARCH_MATRIX.format(model=tiny_tokenizer_dir))


def test_the_search_finds_the_knee_and_the_agent_cell_reports_its_turns(search_matrix: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    plan = cli.harness("plan", search_matrix)
    assert plan.returncode == 0, plan.stderr
    assert "search " in plan.stdout and "highest meeting the SLO in 1..64" in plan.stdout
    first = harness("run", str(search_matrix), out=out)
    assert first.returncode == 0, first.stderr
    records = list((out / "search" / "searches").glob("*.json"))
    assert len(records) == 1
    search = json.loads(records[0].read_text())
    values = [p["value"] for p in search["probes"]]
    assert values[:5] == [1, 2, 4, 8, 16] and search["stopped"] == "bracketed", search
    assert abs(search["answer"] - 10) <= 1, search
    assert next(p for p in search["probes"] if p["value"] == 4)["reused"]  # the grid's cell, not measured again
    labels = {json.loads(p.read_text())["label"] for p in (out / "search" / "runs").glob("*/summary.json")}
    assert {f"m/fake/bf16/tp1/off/w/c{int(v)}" for v in values} <= labels
    assert "m/fake/bf16/tp1/off/agent/c4" in labels

    report = (out / "search" / "report.md").read_text()
    assert "### SLO searches" in report and "/MTok at the SLO**" in report
    assert re.search(r"\*\*concurrency (9|10|11)\*\*", report)
    assert "### Agent sessions, turn by turn" in report and "| 3 |" in report  # a third turn was measured

    again = harness("run", str(search_matrix), out=out)
    assert again.returncode == 0 and "0 cells run" in again.stdout, again.stdout
    assert json.loads(records[0].read_text()) == search

    # `harness gate` judges the probes as the cells they are, as the report's gate does (it once counted the grid only)
    lock = ["--lock-dir", str(tmp_path / "lock")]
    for repeat in ([], ["--add-repeat"], ["--add-repeat"]):  # the gate wants 3 launches: this one run, thrice
        promoted = harness("baseline", str(search_matrix), "--allow-dirty", *repeat, *lock, out=out)
        assert promoted.returncode == 0, promoted.stderr
    gated = harness("gate", str(search_matrix), *lock, out=out)
    assert gated.returncode in (0, 3), gated.stderr
    rows = json.loads((out / "search" / "gate.json").read_text())["result"]["rows"]
    assert {f"m/fake/bf16/tp1/off/w/c{int(v)}" for v in values} <= {row["label"] for row in rows}
    assert not [r for r in rows if r["status"] == "new"], rows  # the baseline promoted the probes too
    assert f"of {len(rows)} checks" in gated.stdout
    assert not live_pids("harness_testing.fake_engine")
