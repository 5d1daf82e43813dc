"""The regression gate: three verdicts with intervals, directions, machine speed, exact counts, failed cells,
label matching, exit codes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.config import GateSpec, load_matrix
from harness.host import HardwareInfo
from harness.metrics import CellSummary
from harness.plan import Plan, expand
from harness.store import Store
from harness.verdict import Lock, build_lock
from harness.verdict.baseline import Baseline, BaselineFile, GateError, promote
from harness.verdict.gate import Against, GateResult, check
from harness.verdict.gate_table import format_table, interval_text

from tests.support.hosts import another_machine
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_ok, store_parity, summary

# MTP needs an MTP layer: the DeepSeek fixture has one
MATRIX = BASE_MATRIX.replace("tiny-qwen3-moe", "tiny-deepseek-v3") + "  speculation: [off, mtp]\n"
STEADY = (100.0, 102.0, 98.0)
"""Output tok/s of three launches: 2% launch noise."""

# The lock records the machine: each test runs as an AMD and as an Intel host (tests/conftest.py: host).
pytestmark = pytest.mark.usefixtures("host")


def _launches(outs: tuple[float, ...], accept: float | None = None, tpot: float | None = None,
              failed: int = 0) -> list[CellSummary]:
    return [summary(out, tpot if tpot is not None else 2000.0 / out, failed=failed, acceptance_rate=accept)
            for out in outs]


def _accept(plan: Plan, label: str) -> float | None:
    return None if "/off/" in label else 0.6


@pytest.fixture
def stored(write_matrix: Callable[..., Path], tmp_path: Path) -> tuple[Plan, Store, Lock, Baseline]:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, _launches(STEADY, _accept(plan, cell.label)), (0.25, 0.25, 0.25))
    lock = build_lock(plan, store)
    return plan, store, lock, promote(plan, store, lock)


def _rerun(plan: Plan, store: Store, label: str, outs: tuple[float, ...], *, machine: float = 0.25,
           accept: float | None = None, failed: int = 0) -> None:
    cell = next(c for c in plan.cells if c.label == label)
    store_launches(store, cell, _launches(outs, accept if accept is not None else _accept(plan, label),
                                          failed=failed), (machine,) * len(outs))


def _check(plan: Plan, store: Store, baseline: Baseline, spec: GateSpec, lock: Lock, **kw: Any) -> GateResult:
    """The gate against a baseline file that holds ``baseline`` alone."""
    return check(plan, store, Against(BaselineFile(matrix=baseline.matrix, machines=[baseline])), spec, lock, **kw)


def _statuses(result: GateResult) -> dict[tuple[str, str], str]:
    return {(r.label, r.metric): r.status for r in result.rows}


OFF1, OFF2, MTP1 = "m/vllm/bf16/tp1/off/w/c1", "m/vllm/bf16/tp1/off/w/c2", "m/vllm/bf16/tp1/mtp1/w/c1"


def test_same_launches_are_ok_with_a_narrow_interval(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    assert result.exit_code == 0 and result.rows and all(r.status == "ok" for r in result.rows)
    assert result.conclusive_share == 1.0 and result.verdict == "PASS" and result.launches == 3
    row = next(r for r in result.rows if r.metric == "output_throughput")
    assert row.ratio == pytest.approx(1.0) and row.low is not None and 0.95 < row.low < 1.0 < row.high  # type: ignore[operator]
    assert row.launches == (3, 3) and row.noise == pytest.approx(0.02, abs=0.005)
    assert "verdict: PASS" in format_table(result) and "+0.0% [-" in interval_text(row)


def test_a_real_regression_is_caught_in_its_direction(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, OFF1, (75.0, 76.0, 74.0))  # 25% slower: throughput down, TPOT up
    _rerun(plan, store, OFF2, (130.0, 131.0, 129.0))  # 30% faster
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    status = _statuses(result)
    assert status[(OFF1, "output_throughput")] == "regressed" and status[(OFF1, "tpot_ms.median")] == "regressed"
    assert status[(OFF1, "interactivity")] == "regressed"
    assert status[(OFF2, "output_throughput")] == "improved" and status[(OFF2, "tpot_ms.median")] == "improved"
    assert (OFF1, "speculation.acceptance_rate") not in status  # off: nothing to hold it to
    assert result.exit_code == 1 and result.rows[0].status == "regressed"  # failures come first
    assert "verdict: FAIL" in format_table(result)


def test_noise_wider_than_the_tolerance_is_inconclusive(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, OFF1, (70.0, 130.0, 95.0))  # median 95: within 10%, but the launches disagree by 1.9x
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    row = next(r for r in result.rows if r.label == OFF1 and r.metric == "output_throughput")
    assert row.status == "inconclusive" and row.low is not None and row.low < 0.9 and row.high > 1.0  # type: ignore[operator]
    assert result.exit_code == 3 and result.verdict == "INCONCLUSIVE" and result.conclusive_share < 1.0  # type: ignore[operator]
    assert result.rows[0].status == "inconclusive"  # doubts before the passes


def test_one_launch_now_borrows_the_baselines_noise(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, OFF1, (99.0,))  # 2% noise, one launch, t at 2 degrees of freedom: -1% [-8%, +6%]
    _rerun(plan, store, OFF2, (60.0,))
    _rerun(plan, store, MTP1, (91.0,))  # -9% [-15%, -3%]: may be within 10%, may be worse
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    status = _statuses(result)
    assert status[(OFF1, "output_throughput")] == "ok" and status[(OFF2, "output_throughput")] == "regressed"
    assert status[(MTP1, "output_throughput")] == "inconclusive"
    row = next(r for r in result.rows if r.label == OFF1 and r.metric == "output_throughput")
    assert row.launches == (3, 1) and row.noise == pytest.approx(0.02, abs=0.005)


def test_a_cell_too_short_is_not_judged_on_its_timings(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, OFF2, (60.0,), failed=1)  # a stall, or a regression: 10 s of load cannot tell
    spec = plan.matrix.gates.model_copy(update={"min_load_s": 12.0})  # each stored launch ran 10 s
    result = _check(plan, store, baseline, spec, lock)
    rows = {r.metric: r for r in result.rows if r.label == OFF2}
    assert rows["output_throughput"].status == rows["tpot_ms.median"].status == "inconclusive"
    assert "its load lasted 10.0 s in a launch, under gates.min_load_s 12 s" in rows["output_throughput"].note
    assert rows["output_throughput"].ratio == pytest.approx(0.6, abs=0.01)  # shown, not judged
    assert rows["error_rate"].status == "regressed"  # what does not depend on time is judged as usual
    judged = _check(plan, store, baseline, plan.matrix.gates, lock)
    assert _statuses(judged)[(OFF2, "output_throughput")] == "regressed"  # unset: judged


def test_machine_speed_guards_or_adjusts(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    for cell in plan.cells:  # the whole machine ran at 0.7x: every figure 30% slower, and so was the probe
        _rerun(plan, store, cell.label, (70.0, 71.4, 68.6), machine=0.25 / 0.7)
    guarded = _check(plan, store, baseline, plan.matrix.gates, lock, now_machine_s=[0.25 / 0.7] * 3)
    row = next(r for r in guarded.rows if r.label == OFF1 and r.metric == "output_throughput")
    assert row.status == "inconclusive" and "as slow as 0.70x of the baseline's speed" in row.note
    assert guarded.speed is not None and guarded.speed.ratio == pytest.approx(0.7)
    assert "this run at 0.70x [0.70, 0.70] of the baseline's" in format_table(guarded)
    assert _statuses(_check(plan, store, baseline, plan.matrix.gates, lock))[(OFF1, "output_throughput")] \
        == "regressed"  # without probes there is nothing to guard with
    adjust = GateSpec.model_validate({"machine_speed": "adjust", "speed_exponent": 1})  # a proportional machine
    adjusted = _check(plan, store, baseline, adjust, lock, now_machine_s=[0.25 / 0.7] * 3)
    assert adjusted.exit_code == 0 and "timings scaled to the baseline's speed" in format_table(adjusted)
    for cell in plan.cells:  # a faster machine cannot vouch for a pass
        _rerun(plan, store, cell.label, STEADY, machine=0.25 / 1.3)
    faster = _check(plan, store, baseline, plan.matrix.gates, lock, now_machine_s=[0.25 / 1.3] * 3)
    assert _statuses(faster)[(OFF1, "output_throughput")] == "inconclusive"
    assert _statuses(faster)[(OFF1, "error_rate")] == "ok"  # exact figures do not depend on the machine
    noisy = _check(plan, store, baseline, plan.matrix.gates, lock, now_machine_s=[0.25 / 1.3, 0.25, 0.25 / 0.8])
    assert noisy.speed is not None and noisy.speed.low is not None and noisy.speed.low < 1.1  # probes disagree:
    assert _statuses(noisy)[(OFF1, "output_throughput")] == "ok"  # no guard on a speed inside the probes' noise


def test_a_baseline_of_another_machine_judges_only_the_exact_checks(
        stored: tuple[Plan, Store, Lock, Baseline], host: HardwareInfo) -> None:
    plan, store, lock, baseline = stored
    other = another_machine(host)
    elsewhere = baseline.model_copy(update={"hardware": other})
    only_elsewhere = BaselineFile(matrix=baseline.matrix, machines=[elsewhere])
    for cell in plan.cells:  # another CPU: every timing 40% off, acceptance lower, the probe slower too
        _rerun(plan, store, cell.label, (60.0, 61.0, 59.0), machine=0.5, accept=0.5)
    result = check(plan, store, Against(only_elsewhere), plan.matrix.gates, lock, now_machine_s=[0.5] * 3)
    status = _statuses(result)
    assert status[(OFF1, "output_throughput")] == status[(MTP1, "speculation.acceptance_rate")] == "inconclusive"
    assert status[(OFF1, "error_rate")] == "ok" and result.speed is None and result.exit_code == 3
    row = next(r for r in result.rows if r.label == OFF1 and r.metric == "output_throughput")
    assert row.ratio == pytest.approx(0.6, abs=0.01) and f"another machine ({other.fingerprint}): shown, not judged" \
        in row.note
    assert f"baseline of another machine ({other.fingerprint}): only exact checks" in format_table(result)
    assert any(d.startswith(f"machine: baseline {other.fingerprint}") for d in result.provenance)
    _rerun(plan, store, OFF2, (60.0, 61.0, 59.0), failed=1)
    store_failed(store, plan.cells[0])
    failing = _statuses(check(plan, store, Against(only_elsewhere), plan.matrix.gates, lock))
    assert failing[(OFF2, "error_rate")] == "regressed" and failing[(plan.cells[0].label, "cell")] == "failed"
    both = BaselineFile(matrix=baseline.matrix, machines=[elsewhere, baseline])  # this machine's entry gates it whole
    judged = _statuses(check(plan, store, Against(both), plan.matrix.gates, lock))
    assert judged[(MTP1, "output_throughput")] == "regressed"
    with pytest.raises(GateError, match="timings of another machine cannot gate this one"):
        check(plan, store, Against(only_elsewhere, strict=True), plan.matrix.gates, lock)


def test_acceptance_is_judged_without_the_speed_correction(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, MTP1, STEADY, accept=0.45, machine=0.25 / 0.7)  # a weaker drafter on a slower machine
    status = _statuses(_check(plan, store, baseline, plan.matrix.gates, lock))
    assert status[(MTP1, "speculation.acceptance_rate")] == "regressed"
    _rerun(plan, store, MTP1, STEADY, accept=0.6, machine=0.25 / 0.7)
    assert _statuses(_check(plan, store, baseline, plan.matrix.gates, lock))[
        (MTP1, "speculation.acceptance_rate")] == "ok"


def test_errors_are_exact(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    _rerun(plan, store, OFF1, STEADY, failed=1)
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    row = next(r for r in result.rows if r.label == OFF1 and r.metric == "error_rate")
    assert row.status == "regressed" and "exact" in row.note and result.exit_code == 1


def test_failed_missing_recovered_and_parity(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, store, lock, baseline = stored
    failed, missing = plan.cells[0], plan.cells[1]
    store_failed(store, failed)
    (store.cell_dir(missing) / "summary.json").unlink()
    status = _statuses(_check(plan, store, baseline, plan.matrix.gates, lock))
    assert status[(failed.label, "cell")] == "failed" and status[(missing.label, "cell")] == "missing"
    broken = promote(plan, store, lock, previous=baseline)  # a cell that failed in the baseline is not gated
    store_launches(store, failed, _launches(STEADY))
    assert _statuses(_check(plan, store, broken, plan.matrix.gates, lock))[(failed.label, "cell")] == "recovered"


def test_parity_failure_fails_the_gate(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    parity = "parity: {categories: [simple_python], limit: 2, reference: bf16}\n"
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  precision: [bf16, bf16-kvfp8]\n" + parity)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, _launches(STEADY))
    lock = build_lock(plan, store)
    baseline = promote(plan, store, lock)
    store_parity(store, plan.cells[-1], passed=False, delta_pp=-12.5)
    result = _check(plan, store, baseline, plan.matrix.gates, lock)
    assert _statuses(result)[(plan.cells[-1].label, "parity")] == "parity" and result.exit_code == 1


def test_changed_server_settings_match_by_label(write_matrix: Callable[..., Path], tmp_path: Path,
                                                stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    plan, _store, _lock, baseline = stored
    slower = expand(load_matrix(write_matrix(MATRIX + "server: {max_num_seqs: 1}\n")))
    assert {c.cell_id for c in slower.cells}.isdisjoint(baseline.cells)
    store = Store(tmp_path / "slower", slower.matrix.name)
    for cell in slower.cells:
        store_launches(store, cell, _launches((60.0, 61.0, 59.0), _accept(slower, cell.label)), (0.25,) * 3)
    result = _check(slower, store, baseline, slower.matrix.gates, build_lock(slower, store))
    row = next(r for r in result.rows if r.label == OFF2 and r.metric == "output_throughput")
    assert row.status == "regressed" and "matched by label" in row.note
    assert any("matrix contents" in d for d in result.provenance)  # flagged, compared anyway


def test_cli_exit_codes(write_matrix: Callable[..., Path], tmp_path: Path, host: HardwareInfo) -> None:
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
    result = runner.invoke(app, ["baseline", *args, "--allow-dirty"])  # the tree under test may be dirty
    assert result.exit_code == 0 and "1 launch(es)" in result.output, result.output
    result = runner.invoke(app, ["gate", *args])  # one launch cannot know its noise
    assert result.exit_code == 2 and "needs at least 3" in result.output and "--launches 3" in result.output
    for cell in plan.cells:
        store_launches(store, cell, _launches(STEADY))
    assert runner.invoke(app, ["baseline", *args, "--allow-dirty"]).exit_code == 0
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 0 and "verdict: PASS" in result.output, result.output
    store_launches(store, plan.cells[0], _launches((70.0, 130.0, 95.0)))
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 3 and "verdict: INCONCLUSIVE" in result.output
    store_launches(store, plan.cells[0], _launches((60.0, 61.0, 59.0)))
    result = runner.invoke(app, ["gate", *args])
    assert result.exit_code == 1 and "| regressed | m/vllm/bf16/tp1/off/w/c1 | output_throughput" in result.output
    path = lock_dir / "t.baseline.json"
    other = another_machine(host)
    elsewhere = path.read_text().replace(f'"name": "{host.name}"', f'"name": "{other.name}"')
    assert build_lock(plan, store).hardware == host and elsewhere != path.read_text()
    path.write_text(elsewhere)
    result = runner.invoke(app, ["baseline", *args, "--allow-dirty", "--add-repeat"])
    assert result.exit_code == 2 and "holds no baseline of this machine" in result.output, result.output
    result = runner.invoke(app, ["baseline", *args, "--allow-dirty"])
    assert result.exit_code == 0 and f"kept the baseline of: {other.fingerprint}" in result.output, result.output


def test_a_regression_the_machine_may_explain_is_not_attributed(stored: tuple[Plan, Store, Lock, Baseline]) -> None:
    """Probes that disagree (this run somewhere between 0.5x and 1x): on a machine where the engine slows in
    proportion, a 25% drop could be the machine and a 65% one cannot; where it slows as the probe cubed (the
    default, measured on this project's VM) neither can be blamed on the recipe. The guard needs no proof that the
    machine was slower to withhold the blame."""
    plan, store, lock, baseline = stored
    probes = [0.25 / 0.55, 0.25 / 0.9, 0.25 / 0.7]
    _rerun(plan, store, OFF1, (75.0, 76.5, 73.5), machine=0.25 / 0.7)
    _rerun(plan, store, OFF2, (35.0, 35.7, 34.3), machine=0.25 / 0.7)
    proportional = GateSpec.model_validate({"speed_exponent": 1})
    result = _check(plan, store, baseline, proportional, lock, now_machine_s=probes)
    assert result.speed is not None and result.speed.low is not None and result.speed.high is not None
    assert result.speed.low < 0.75 and result.speed.high > 0.9  # not provably slower than the tolerance
    status = _statuses(result)
    assert status[(OFF1, "output_throughput")] == "inconclusive"
    assert status[(OFF2, "output_throughput")] == "regressed"
    cubed = _statuses(_check(plan, store, baseline, plan.matrix.gates, lock, now_machine_s=probes))
    assert cubed[(OFF1, "output_throughput")] == cubed[(OFF2, "output_throughput")] == "inconclusive"
    steady = [0.25 / 0.99, 0.25 / 1.0, 0.25 / 0.995]  # probes that agree the machine barely moved
    assert _statuses(_check(plan, store, baseline, plan.matrix.gates, lock, now_machine_s=steady))[
        (OFF1, "output_throughput")] == "regressed"  # then even cubed, a 25% drop is the recipe's
    assert _statuses(_check(plan, store, baseline, plan.matrix.gates, lock))[(OFF1, "output_throughput")] \
        == "regressed"  # unprobed, the same 25% drop is blamed on the recipe


def test_a_baseline_of_uncommitted_code_is_refused(write_matrix: Callable[..., Path], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cli.judge as judge

    matrix = write_matrix(MATRIX)
    plan = expand(load_matrix(matrix))
    out, lock_dir = tmp_path / "reports", tmp_path / "lock"
    store = Store(out, plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, _launches(STEADY))
    real = judge.build_lock

    def dirty(*a: object, **k: object) -> Lock:
        lock = real(*a, **k)  # type: ignore[arg-type]
        return lock.model_copy(update={"harness": lock.harness.model_copy(update={"dirty": True, "commit": "abc"})})

    monkeypatch.setattr(judge, "build_lock", dirty)
    args = [str(matrix), "--out", str(out), "--lock-dir", str(lock_dir)]
    result = CliRunner().invoke(app, ["baseline", *args])
    assert result.exit_code == 2 and "harness.dirty" in result.output and "--allow-dirty" in result.output
    assert not (lock_dir / f"{plan.matrix.name}.baseline.json").exists()
    assert CliRunner().invoke(app, ["baseline", *args, "--allow-dirty"]).exit_code == 0
