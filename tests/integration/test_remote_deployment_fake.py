"""Everything downstream of the load on a deployment, against the fake server started by hand (a subprocess the
test starts, as a user would, never the harness): an SLO search, agent sessions, a request-rate axis, two launches,
the gate and the history, a baseline promoted and a regression check, the report and the Benchmark Report export.

The fake server's latency curve is known (``tests/integration/test_search_fake.py``: TPOT about 12 + 4c ms), so the
search's answer on the deployment is the knee at c = 10, as on the launched fake server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.servers import free_port

from tests.support import cli
from tests.support.hand_started import started_by_hand

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: reached
slo: {{tpot_p50_ms: 54}}
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 20, num_requests: 8, warmup_requests: 0}}
  agent: {{kind: agent, num_requests: 4, turns: {{min: 2, max: 3}}, system_prompt_tokens: 20, tools: 2,
          user_tokens: 4, tool_result_tokens: 6, output_tokens: 6, warmup_requests: 0}}
deployments:
  fake-by-hand: {{base_url: "{url}", model: m, served_model: m, runtime: openai, metrics: self,
                 declared: {{precision: fp8, parallel: {{tp: 8, ep: 8}}}}, limits: {{max_concurrency: 64}}}}
axes:
  concurrency: [4, {{search: slo, min: 1, max: 16, max_probes: 8}}]
  request_rate: [.inf, 50]
exclude:
  - {{workload: agent, concurrency: search}}
  - {{workload: agent, request_rate: 50}}
  - {{request_rate: 50, concurrency: search}}
gates: {{machine_speed: none}}
predict: {{predictor: none}}
"""

GATED = """
name: gated
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 20, num_requests: 8, warmup_requests: 0}}
deployments:
  fake-by-hand: {{base_url: "{url}", model: m, served_model: m, runtime: openai}}
axes: {{concurrency: [4]}}
launches: 3
gates: {{machine_speed: none}}
predict: {{predictor: none}}
"""


@pytest.fixture
def fake_by_hand(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "harness_testing.fake_engine", "--port", str(port), "--model", "m", "--ttft-ms",
            "2", "--itl-ms", "12", "--itl-per-active-ms", "4"]
    with started_by_hand(argv, tmp_path / "fake.log", port, timeout_s=60) as url:
        yield url


def test_a_deployment_gets_every_downstream_stage(fake_by_hand: str, write_matrix: Callable[..., Path],
                                                 tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    """An SLO search, agent sessions and a request-rate axis on one deployment, the history, the report and the
    export; then a one-cell matrix on three launches, its baseline promoted and the same run gated against it."""
    matrix = write_matrix(MATRIX.format(model=tiny_tokenizer_dir, url=fake_by_hand))
    out = tmp_path / "reports"
    lock_dir = tmp_path / "lock"
    done = cli.harness("run", matrix, "--out", out)
    assert done.returncode == 0, done.stderr[-4000:]
    root = out / "reached"
    summaries = [json.loads(p.read_text()) for p in (root / "runs").glob("*/summary.json")]
    assert summaries and all(s["status"] == "ok" for s in summaries)
    labels = {s["label"] for s in summaries}
    assert any("/agent/" in label for label in labels) and any(label.endswith("/r50") for label in labels), labels
    searches = [json.loads(p.read_text()) for p in (root / "searches").glob("*.json")]
    assert searches and all(9 <= (s.get("answer") or 0) <= 11 for s in searches), searches
    report = (root / "report.md").read_text()
    assert "fake-by-hand" in report and "undeclared†" in report and "fp8†" in report
    history = cli.harness("history", matrix, "--out", out)
    assert history.returncode == 0 and "fake-by-hand" in history.stdout, history.stderr[-2000:]
    exported = cli.harness("export", matrix, "--out", out)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert any("launched_by_harness: false" in p.read_text() for p in (root / "export").rglob("*.yaml"))
    gated = write_matrix(GATED.format(model=tiny_tokenizer_dir, url=fake_by_hand), name="gated.yaml")
    assert cli.harness("run", gated, "--out", out, "--lock-dir", lock_dir).returncode == 0
    promoted = cli.harness("baseline", gated, "--out", out, "--lock-dir", lock_dir, "--allow-dirty")
    assert promoted.returncode == 0, promoted.stderr[-2000:]
    gate = cli.harness("gate", gated, "--out", out, "--lock-dir", lock_dir)
    assert gate.returncode in (0, 3), gate.stdout + gate.stderr[-2000:]  # the same run against itself: never 1
    rows = json.loads((out / "gated" / "gate.json").read_text())["result"]["rows"]
    assert rows and all(r["label"].startswith("fake-by-hand/") for r in rows)
    assert not {r["status"] for r in rows} & {"regressed", "failed"}, rows
