"""Calibrating the CPU step model: the fit recovers the engine costs that made a set of cells, and on the stored
calibration run a fit on one checkpoint width predicts the other width's measured cells (its GEMMs timed apart)."""

from __future__ import annotations

import statistics

import pytest

from harness.predict.cpu_step_fit import CalibrationCell, CalibrationRun, EngineCosts, fit, load_calibration


def made_by(costs: EngineCosts, c: int, isl: int, gemm_decode: float, gemm_prefill: float) -> CalibrationCell:
    tpot = costs.a_ms + costs.s_ms * c + gemm_decode
    ttft = costs.t0_ms + costs.a_ms + costs.s_ms * c + costs.p_ms * (c * isl - c) + gemm_prefill
    return CalibrationCell(label=f"m c{c}", concurrency=c, input_tokens=isl, ttft_ms=ttft, tpot_ms=tpot,
                           gemm_decode_ms=gemm_decode, gemm_prefill_ms=gemm_prefill)


def test_the_fit_recovers_the_costs_that_made_the_cells() -> None:
    truth = EngineCosts(a_ms=3.0, s_ms=0.2, p_ms=0.05, t0_ms=9.0, probe_s=1.0, source="made up")
    cells = tuple(made_by(truth, c, 128, gemm_decode=10.0 * c, gemm_prefill=300.0 * c) for c in (1, 4, 16))
    fitted = fit(CalibrationRun(measured="synthetic", probe_s=1.0, threads=1, cells=cells))
    for name in ("a_ms", "s_ms", "p_ms", "t0_ms"):
        assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=1e-9), name


def test_a_fit_needs_a_cell() -> None:
    with pytest.raises(ValueError, match="at least one"):
        fit(CalibrationRun(measured="none", probe_s=1.0, threads=1, cells=()))


def held_out_errors(run: CalibrationRun, held: str) -> list[float]:
    costs = fit(run, [c for c in run.cells if not c.label.startswith(held)])
    errors = []
    for c in (c for c in run.cells if c.label.startswith(held)):
        tpot = costs.a_ms + costs.s_ms * c.concurrency + c.gemm_decode_ms
        ttft = (costs.t0_ms + costs.a_ms + costs.s_ms * c.concurrency
                + costs.p_ms * (c.concurrency * c.input_tokens - c.concurrency) + c.gemm_prefill_ms)
        errors += [abs(c.tpot_ms / tpot - 1), abs(c.ttft_ms / ttft - 1)]
    return errors


def test_a_fit_on_the_small_width_predicts_the_wide_one_on_the_stored_run() -> None:
    """The committed calibration: tiny-qwen3-moe (2 MB, no matrix large enough to stream) fixes the engine's own
    costs; tiny-deepseek-v3 (0.2 GB dense layer) is then predicted from those and its GEMMs alone."""
    run = load_calibration()
    assert {c.label.split()[0] for c in run.cells} >= {"tiny-qwen3-moe", "tiny-deepseek-v3"}
    errors = held_out_errors(run, "tiny-deepseek-v3")
    assert statistics.median(errors) < 0.25, errors
