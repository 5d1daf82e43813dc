"""The regression gate: directions, tolerance, repeats' spread, failed cells, provenance, exit codes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config.matrix import GATED_METRICS, GateSpec, load_matrix
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan.cells import Plan
from harness.plan.expand import expand
from harness.store import Store
from harness.verdict.gate import (
    GateError,
    GateResult,
    check,
    format_table,
    gated_metric,
    promote,
    read_baseline,
    write_baseline,
)
from harness.verdict.lock import HardwareInfo, Lock, build_lock

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_ok, summary

# MTP needs an MTP layer: the DeepSeek fixture has one
MATRIX = BASE_MATRIX.replace("tiny-qwen3-moe", "tiny-deepseek-v3") + "  speculation: [off, mtp]\n"


@pytest.fixture
def stored(write_matrix: Callable[..., Path], tmp_path: Path) -> tuple[Plan, Store, Lock]:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        store_ok(store, cell, summary(100.0, 20.0, acceptance_rate=None if cell.server.speculation.is_off else 0.6))
    return plan, store, build_lock(plan, store)


def _rerun(plan: Plan, store: Store, label: str, **figures: float) -> None:
    cell = next(c for c in plan.cells if c.label == label)
    store_ok(store, cell, summary(figures.get("out", 100.0), figures.get("tpot", 20.0),
                                  acceptance_rate=figures.get("accept")))


def _statuses(result: GateResult) -> dict[tuple[str, str], str]:
    return {(r.label, r.metric): r.status for r in result.rows}


def test_gated_metric_names() -> None:
    assert gated_metric("ttft_ms.p99").value(summary(100.0, 20.0, ttft_ms=50.0)) == pytest.approx(60.0)
    assert gated_metric("speculation.acceptance_rate").metric.direction == "higher"
    with pytest.raises(ValueError, match="not a gateable metric"):
        gated_metric("tok_per_joule")
    for name in ("duration_s", "ttft_ms", "speculation.per_position"):  # no direction; a distribution; a vector
        with pytest.raises(ValueError, match="not a gateable metric"):
            gated_metric(name)


def test_default_gated_metrics_are_gateable() -> None:
    assert [gated_metric(name).name for name in GATED_METRICS] == list(GATED_METRICS)


def test_unknown_gate_metric_is_a_config_error(write_matrix: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match="not a gateable metric"):
        load_plan(write_matrix(MATRIX + "gates: {metrics: [output_throughput, ttft_ms.p42]}\n"))


def test_same_run_passes(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    result = check(plan, store, promote(plan, store, lock), plan.matrix.gates, lock)
    assert result.exit_code == 0 and result.rows and all(r.status == "ok" for r in result.rows)
    assert result.spread is not None and result.spread.change_pct == 0.0
    assert "verdict: PASS" in format_table(result)


def test_each_metric_is_judged_in_its_direction(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    _rerun(plan, store, "m/vllm/bf16/tp1/off/w/c1", out=85.0)  # throughput -15%: worse
    _rerun(plan, store, "m/vllm/bf16/tp1/off/w/c2", out=95.0, tpot=21.0)  # -5% / +5%: noise
    _rerun(plan, store, "m/vllm/bf16/tp1/mtp1/w/c1", tpot=23.0, accept=0.6)  # TPOT +15%: worse (lower is better)
    _rerun(plan, store, "m/vllm/bf16/tp1/mtp1/w/c2", out=130.0, tpot=15.0, accept=0.5)  # faster, accepts less
    result = check(plan, store, baseline, plan.matrix.gates, lock)
    status = _statuses(result)
    assert status[("m/vllm/bf16/tp1/off/w/c1", "output_throughput")] == "regressed"
    assert status[("m/vllm/bf16/tp1/off/w/c2", "output_throughput")] == "ok"
    assert status[("m/vllm/bf16/tp1/off/w/c2", "tpot_ms.median")] == "ok"
    assert status[("m/vllm/bf16/tp1/mtp1/w/c1", "tpot_ms.median")] == "regressed"
    assert status[("m/vllm/bf16/tp1/mtp1/w/c1", "interactivity")] == "regressed"
    assert status[("m/vllm/bf16/tp1/mtp1/w/c2", "output_throughput")] == "improved"
    assert status[("m/vllm/bf16/tp1/mtp1/w/c2", "speculation.acceptance_rate")] == "regressed"
    assert ("m/vllm/bf16/tp1/off/w/c1", "speculation.acceptance_rate") not in status  # off: nothing to hold it to
    assert result.exit_code == 1 and result.rows[0].status == "regressed"  # failures come first
    assert "verdict: FAIL" in format_table(result)


def test_repeats_widen_the_band(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    label = "m/vllm/bf16/tp1/off/w/c1"
    first = promote(plan, store, lock)
    _rerun(plan, store, label, out=80.0)
    both = promote(plan, store, lock, previous=first)
    assert both.repeats == 2 and both.cells[next(c.cell_id for c in plan.cells if c.label == label)].values[
        "output_throughput"] == [100.0, 80.0]
    _rerun(plan, store, label, out=75.0)  # 25% below the median but within 10% of the worst repeat (80)
    assert _statuses(check(plan, store, both, plan.matrix.gates, lock))[(label, "output_throughput")] == "ok"
    _rerun(plan, store, label, out=70.0)
    assert _statuses(check(plan, store, both, plan.matrix.gates, lock))[(label, "output_throughput")] == "regressed"
    tight = GateSpec.model_validate({"tolerance": 0.05, "metrics": ["output_throughput"]})
    _rerun(plan, store, label, out=75.0)
    assert check(plan, store, both, tight, lock).exit_code == 1


def test_failed_and_missing_cells_fail_the_gate(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    failed, missing = plan.cells[0], plan.cells[1]
    store_failed(store, failed)
    (store.cell_dir(missing) / "summary.json").unlink()
    result = check(plan, store, baseline, plan.matrix.gates, lock)
    status = _statuses(result)
    assert status[(failed.label, "cell")] == "failed" and status[(missing.label, "cell")] == "missing"
    assert result.exit_code == 1
    # a cell that failed in the baseline and runs now is reported, not gated
    recovered = promote(plan, store, lock)
    store_ok(store, failed, summary(100.0, 20.0))
    assert _statuses(check(plan, store, recovered, plan.matrix.gates, lock))[(failed.label, "cell")] == "recovered"


def test_errors_from_zero_regress(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    cell = plan.cells[0]
    store_ok(store, cell, summary(100.0, 20.0, failed=1))
    assert _statuses(check(plan, store, baseline, plan.matrix.gates, lock))[(cell.label, "error_rate")] == "regressed"


def test_provenance_refused_or_flagged(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    with pytest.raises(GateError, match="matrix: baseline other, now t"):
        check(plan, store, baseline.model_copy(update={"matrix": "other"}), plan.matrix.gates, lock)
    elsewhere = baseline.model_copy(update={"hardware": HardwareInfo(kind="gpu", name="NVIDIA H100", count=8),
                                            "harness_version": "0.0.9"})
    result = check(plan, store, elsewhere, plan.matrix.gates, lock)
    assert result.exit_code == 0 and len(result.provenance) == 2
    assert "machine: baseline gpu: NVIDIA H100 x8" in result.provenance[1]
    assert "flagged: harness version: baseline 0.0.9" in format_table(result)
    with pytest.raises(GateError, match="baseline refused"):
        check(plan, store, elsewhere, plan.matrix.gates, lock, strict=True)
    with pytest.raises(GateError, match="cannot add a repeat"):
        promote(plan, store, lock, previous=elsewhere)


def test_baseline_file_round_trip_and_errors(stored: tuple[Plan, Store, Lock], tmp_path: Path) -> None:
    plan, store, lock = stored
    path = write_baseline(promote(plan, store, lock), tmp_path / "lock" / "t.baseline.json")
    assert read_baseline(path).cells.keys() == {c.cell_id for c in plan.cells}
    with pytest.raises(GateError, match="no baseline at"):
        read_baseline(tmp_path / "absent.json")
    path.write_text("{}")
    with pytest.raises(GateError, match="not a baseline"):
        read_baseline(path)
    with pytest.raises(GateError, match="no results"):
        promote(plan, Store(tmp_path / "empty", "t"), lock)


def test_cli_exit_codes(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = write_matrix(MATRIX)
    plan = expand(load_matrix(matrix))
    out, lock_dir = tmp_path / "reports", tmp_path / "lock"
    store = Store(out, plan.matrix.name)
    for cell in plan.cells:
        store_ok(store, cell, summary(100.0, 20.0))
    args = [str(matrix), "--out", str(out), "--lock-dir", str(lock_dir)]
    runner = CliRunner()
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 2 and "no baseline at" in result.output
    result = runner.invoke(app, ["baseline", *args])
    assert result.exit_code == 0, result.output
    assert (lock_dir / "t.baseline.json").exists() and (lock_dir / "t.lock.json").exists()
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 0 and "lock: no drift from" in result.output and "verdict: PASS" in result.output
    store_ok(store, plan.cells[0], summary(80.0, 20.0))
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 1 and "| regressed | m/vllm/bf16/tp1/off/w/c1 | output_throughput" in result.output
    result = runner.invoke(app, ["lock", *args])
    assert result.exit_code == 0 and (out / "t" / "lock.json").exists()


def test_repeats_within_a_run_are_baseline_samples(stored: tuple[Plan, Store, Lock]) -> None:
    from harness.metrics.spread import spread

    plan, store, lock = stored
    cell = plan.cells[0]
    repeated = summary(90.0, 20.0).model_copy(update={"spread": {"output_throughput": spread([100.0, 90.0, 80.0])}})
    store_ok(store, cell, repeated)
    baseline = promote(plan, store, lock)
    assert baseline.cells[cell.cell_id].values["output_throughput"] == [100.0, 90.0, 80.0] and baseline.samples == 3
    store_ok(store, cell, summary(75.0, 20.0))  # below the median, within 10% of the slowest repeat
    result = check(plan, store, baseline, plan.matrix.gates, lock)
    assert _statuses(result)[(cell.label, "output_throughput")] == "ok" and result.repeats == 3
