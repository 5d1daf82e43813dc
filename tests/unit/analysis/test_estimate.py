"""The plan's cost estimate: labelled as one, with its assumptions, from the workload sizes and the price table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.estimate import cell_seconds, estimate, priors_for, render_estimate
from harness.config import load_matrix
from harness.plan import expand

REPO = Path(__file__).resolve().parents[3]
MATRIX = """
name: e
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
models:
  m: {id: org/m, routed_experts: 8, num_nextn_predict_layers: 0}
workloads:
  w: {kind: random, input_tokens: 100, output_tokens: 100, num_requests: 40, warmup_requests: 0}
axes:
  concurrency: [4, 400]
estimate: {tok_s_per_user: 10, tok_s_per_replica: 1000, ttft_s: 1, server_start_s: 600}
"""


def test_cell_time_from_sizes_and_priors(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    priors = priors_for(plan.matrix)
    slow, saturated = plan.cells
    # c=4: 40 requests x 100 tokens at 4 x 10 tok/s, plus 10 waves x 1 s TTFT
    assert cell_seconds(slow, priors) == pytest.approx(4000 / 40 + 10)
    # c=400: 800 requests (2 x concurrency) at the replica's 1000 tok/s, two waves
    assert cell_seconds(saturated, priors) == pytest.approx(80_000 / 1000 + 2)


def test_a_cell_with_a_minimum_duration_is_estimated_at_its_runs(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX + "min_measured_s: 200\n")))
    priors = priors_for(plan.matrix)
    slow, saturated = plan.cells
    assert cell_seconds(slow, priors) == pytest.approx(2 * 110)  # 110 s a run: two runs reach 200 s
    assert cell_seconds(saturated, priors) == pytest.approx(3 * 82)  # 82 s a run: three


def test_gpu_hours_and_dollars(write_matrix: Callable[..., Path]) -> None:
    est = estimate(expand(load_matrix(write_matrix(MATRIX))))
    hours = (600 + 110 + 82) / 3600
    assert est.hours == pytest.approx(hours)
    assert est.device_hours == pytest.approx(hours * 8)
    assert est.usd == pytest.approx(hours * 8 * 5.50)  # B200 from harness.analysis.cost's table
    text = "\n".join(render_estimate(est))
    assert text.startswith("ESTIMATE (not a measurement)") and "10 output tok/s per user" in text
    assert "GPU-hours: 1.8" in text and "$5.50 per GPU-hour" in text


@pytest.mark.parametrize("name", ["deepseek-v31-b200.yaml", "qwen3-235b-b200.yaml", "deepseek-v31-b200-pd.yaml",
                                  "deepseek-v31-nvl72.yaml"])
def test_production_plans_print_their_cost(name: str) -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    result = CliRunner().invoke(app, ["plan", str(REPO / "matrices" / name)])
    assert result.exit_code == 0, result.output
    assert "launch: " in result.output and "ESTIMATE (not a measurement)" in result.output
    assert "GPU-hours:" in result.output and "cost: $" in result.output and "nothing was launched" in result.output
    # every cell has its prediction (AIConfigurator: no GPU needed) or the reason it has none, on the next line
    lines = result.output.splitlines()
    cells = [i for i, line in enumerate(lines) if line.startswith("  cell ")]
    assert cells and all(lines[i + 1].startswith(("    PREDICTED (aiconfigurator): ", "    no prediction: "))
                         for i in cells)
    assert sum(lines[i + 1].startswith("    PREDICTED") for i in cells) >= len(cells) / 2
    assert "tok/s/GPU" in result.output and "/MTok" in result.output
    assert "load time of " in result.output and "from their PREDICTION" in result.output


def test_a_deployment_costs_its_load_and_no_start(write_matrix: Callable[..., Path]) -> None:
    """A deployment runs already: its rounds add their load time, never a server start."""
    reached = MATRIX + """deployments:
  there: {base_url: "http://127.0.0.1:9", model: m, served_model: m, runtime: openai,
          limits: {max_concurrency: 400, max_requests: 100000}}
"""
    alone = estimate(expand(load_matrix(write_matrix(reached))))
    both = estimate(expand(load_matrix(write_matrix(reached.replace("axes:", "axes:\n  runtime: [vllm]"), "b.yaml"))))
    assert alone.launches == 0 and alone.start_s == 0 and alone.load_s > 0
    assert both.launches > 0 and both.load_s > alone.load_s
