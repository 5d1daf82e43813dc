"""Calibrating the CPU step model: the fit recovers the engine costs (per layer, per tensor-parallel degree) and the
drafting steps that made a set of cells, and on the committed calibration a fit on two checkpoints predicts the
third's measured cells (its GEMMs timed apart)."""

from __future__ import annotations

import statistics

import pytest

from harness.predict.cpu_step_fit import (
    CalibrationCell,
    CalibrationRun,
    EngineCosts,
    fit,
    fitted_degrees,
    load_calibration,
)


def predicted(costs: EngineCosts, cell: CalibrationCell) -> tuple[float, float]:
    """(TTFT, TPOT) of a cell without speculation, as the step model computes them."""
    engine = cell.layers * (costs.a_ms + costs.s_ms * cell.concurrency)
    int8 = costs.p_int8_ms if costs.p_int8_ms is not None else costs.p_ms

    def compute(mflop: float, int8_mflop: float) -> float:
        return costs.p_ms * (mflop - int8_mflop) + int8 * int8_mflop

    tpot = engine + compute(cell.mflop_decode, cell.int8_mflop_decode) + cell.gemm_decode_ms
    ttft = costs.t0_ms + engine + compute(cell.mflop_prefill, cell.int8_mflop_prefill) + cell.gemm_prefill_ms
    return ttft, tpot


def made_by(costs: EngineCosts, c: int, layers: int, tp: int = 1) -> CalibrationCell:
    shape = CalibrationCell(label=f"m{layers} tp{tp} c{c}", concurrency=c, input_tokens=128, ttft_ms=1, tpot_ms=1,
                            gemm_decode_ms=10.0 * c, gemm_prefill_ms=300.0 * c, mflop_decode=0.4 * c * layers,
                            mflop_prefill=50.0 * c * layers, layers=layers, tp=tp)
    ttft, tpot = predicted(costs, shape)
    return shape.model_copy(update={"ttft_ms": ttft, "tpot_ms": tpot})


TRUTH = EngineCosts(a_ms=1.5, s_ms=0.1, p_ms=0.12, t0_ms=9.0, probe_s=1.0, source="made up")
TP2 = EngineCosts(a_ms=6.0, s_ms=0.3, p_ms=0.3, t0_ms=12.0, probe_s=1.0, source="made up")


def test_the_fit_recovers_the_costs_of_each_degree_across_depths() -> None:
    cells = tuple(made_by(TRUTH, c, layers) for c in (1, 4, 16) for layers in (2, 3)) + tuple(
        made_by(TP2, c, 2, tp=2) for c in (1, 4, 16))
    run = CalibrationRun(measured="synthetic", probe_s=1.0, threads=1, cells=cells)
    assert fitted_degrees(run) == (1, 2)
    for tp, truth in ((1, TRUTH), (2, TP2)):
        fitted = fit(run, tp=tp)
        for name in ("a_ms", "s_ms", "p_ms", "t0_ms"):
            assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=1e-9), (tp, name)


def test_a_drafting_step_is_fitted_as_a_multiple_of_the_trunk_step() -> None:
    plain = tuple(made_by(TRUTH, c, 2) for c in (1, 4, 16))
    k, accepted, multiple, draft_gemm = 3, 1.6, 0.8, 0.5
    verify = 2 * (TRUTH.a_ms + TRUTH.s_ms) + TRUTH.p_ms * 1.6 + 4.0
    draft = 2 * (multiple * TRUTH.a_ms + TRUTH.s_ms) + TRUTH.p_ms * 0.2 + draft_gemm
    spec = CalibrationCell(label="eagle c1", concurrency=1, input_tokens=128, ttft_ms=50,
                           tpot_ms=(verify + k * draft) / (1 + accepted), gemm_decode_ms=4.0, gemm_prefill_ms=0,
                           mflop_decode=1.6, method="eagle3", k=k, accepted=accepted, draft_gemm_ms=draft_gemm,
                           draft_mflop=0.2)
    fitted = fit(CalibrationRun(measured="synthetic", probe_s=1.0, threads=1, cells=(*plain, spec)))
    assert fitted.draft_steps == {"eagle3": pytest.approx(multiple, abs=1e-3)}


def test_int8_matrices_get_a_rate_of_their_own() -> None:
    truth = TRUTH.model_copy(update={"p_int8_ms": 0.03})
    bf16 = tuple(made_by(truth, c, 2) for c in (1, 4, 16))
    int8 = tuple(made_by(truth, c, 3).model_copy(update={"int8_mflop_decode": 0.2 * c, "int8_mflop_prefill": 30.0 * c})
                 for c in (1, 4, 16))
    int8 = tuple(cell.model_copy(update=dict(zip(("ttft_ms", "tpot_ms"), predicted(truth, cell), strict=True)))
                 for cell in int8)
    fitted = fit(CalibrationRun(measured="synthetic", probe_s=1.0, threads=1, cells=bf16 + int8))
    assert fitted.p_int8_ms == pytest.approx(0.03, rel=1e-6) and fitted.p_ms == pytest.approx(TRUTH.p_ms, rel=1e-6)
    assert fit(CalibrationRun(measured="synthetic", probe_s=1.0, threads=1, cells=bf16)).p_int8_ms is None


def test_a_fit_needs_a_cell_at_its_degree() -> None:
    with pytest.raises(ValueError, match="at least one"):
        fit(CalibrationRun(measured="none", probe_s=1.0, threads=1, cells=(made_by(TRUTH, 1, 2),)), tp=2)


def held_out_errors(run: CalibrationRun, held: str) -> list[float]:
    costs = fit(run, [c for c in run.cells if not c.label.startswith(held)])
    errors = []
    for c in (c for c in run.cells if c.label.startswith(held) and c.method == "off" and c.tp == 1):
        ttft, tpot = predicted(costs, c)
        errors += [abs(c.tpot_ms / tpot - 1), abs(c.ttft_ms / ttft - 1)]
    return errors


@pytest.mark.parametrize("held", ["tiny-deepseek-v3", "tiny-qwen3-recall"])
def test_a_fit_on_two_checkpoints_predicts_the_third_on_the_committed_calibration(held: str) -> None:
    """The committed calibration holds three checkpoints: tiny-qwen3-moe (2 layers, 2 MB: every matrix stays in
    cache), tiny-qwen3-recall (3 layers, 4 MB) and tiny-deepseek-v3 (2 layers and a 0.2 GB dense layer that streams).
    Fitted on two, the third is predicted from those costs and its own GEMMs alone."""
    run = load_calibration()
    assert {c.label.split()[0] for c in run.cells} >= {"tiny-qwen3-moe", "tiny-qwen3-recall", "tiny-deepseek-v3"}
    errors = held_out_errors(run, held)
    assert errors and statistics.median(errors) < 0.25, errors
