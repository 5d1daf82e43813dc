"""The calibration refit on stored runs: it keeps only the cells the step model describes, and on cells that the
step model itself made (known engine costs, two checkpoint depths) it recovers those costs, predicts a held-out
checkpoint's cells exactly, and writes a calibration the predictor loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from harness.config import load_matrix
from harness.config.predict import PredictSpec
from harness.plan import Cell, expand
from harness.predict import Prediction
from harness.predict.cpu_step import CpuStep
from harness.predict.cpu_step_fit import EngineCosts, fit, load_calibration
from harness.store import Store
from tools.refit_cpu_step import Measured, calibration_cell, check, main, measured_cells, median_error, refit

from tests.support.stored_cells import store_failed, store_ok, summary

TRUTH = EngineCosts(a_ms=1.5, s_ms=0.1, p_ms=0.12, t0_ms=9.0, probe_s=1.0, source="made up")
"""The engine costs the stored cells were made with."""


def checkpoint(root: Path, layers: int, hidden: int = 64) -> Path:
    """A checkpoint's config and safetensors header as read_shape reads them: attention and 4 experts a layer, all
    small enough to stay in cache (counted in FLOPs, never timed), no LM head of its own (tied embeddings)."""
    weights = {"model.embed_tokens.weight": np.zeros((256, hidden), np.float16)}
    for layer in range(layers):
        weights[f"model.layers.{layer}.self_attn.q_proj.weight"] = np.zeros((hidden, hidden), np.float16)
        for expert in range(4):
            weights[f"model.layers.{layer}.mlp.experts.{expert}.up_proj.weight"] = np.zeros((32, hidden), np.float16)
    root.mkdir()
    save_file(weights, str(root / "model.safetensors"))
    (root / "config.json").write_text(json.dumps({"num_hidden_layers": layers, "num_experts": 4,
                                                  "num_experts_per_tok": 2}))
    return root


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, list[Cell]]:
    """A stored run of two checkpoints (2 and 3 layers) at c1/c4/c16 on vLLM, each cell measured exactly as the step
    model with TRUTH predicts it, and the same cells on SGLang twice as slow (an engine the model does not describe);
    and the vLLM cells."""
    shallow, deep = checkpoint(tmp_path / "shallow", 2), checkpoint(tmp_path / "deep", 3)
    matrix = tmp_path / "cal.yaml"
    matrix.write_text(f"""
name: cal
hardware: {{kind: cpu}}
models:
  shallow: {{id: "{shallow}"}}
  deep: {{id: "{deep}"}}
workloads:
  w: {{kind: random, input_tokens: 32, output_tokens: 8, num_requests: 8, warmup_requests: 0}}
axes:
  runtime: [vllm, sglang]
  concurrency: [1, 4, 16]
""")
    cells = list(expand(load_matrix(matrix)).cells)
    store = Store(tmp_path / "reports", "cal")
    predictor = CpuStep(PredictSpec(), costs=TRUTH, speed_ratio=1.0)
    for cell in cells:
        (made,) = predictor.predict(cell.server, [cell])
        assert isinstance(made, Prediction)
        slower = 1.0 if cell.server.runtime == "vllm" else 2.0
        store_ok(store, cell, summary(made.output_tok_s / slower, made.tpot_ms * slower, made.ttft_ms * slower))
    return store.dir, [c for c in cells if c.server.runtime == "vllm"]


def test_only_finished_cells_of_the_vllm_cpu_engine_count(report: tuple[Path, list[Cell]]) -> None:
    folder, cells = report
    store = Store(folder.parent, folder.name)
    store_failed(store, cells[0])
    (folder / "runs" / "not-a-cell").mkdir()
    kept = {m.cell.cell_id for m in measured_cells(folder)}
    assert kept == {c.cell_id for c in cells[1:]}


def test_a_cache_sized_model_has_no_streamed_gemms_and_flops_in_proportion_to_its_tokens(
        report: tuple[Path, list[Cell]]) -> None:
    folder, _ = report
    for measured in measured_cells(folder):
        cal = calibration_cell(measured, kernels={})
        assert cal.gemm_decode_ms == cal.gemm_prefill_ms == 0.0
        # decode carries c tokens, prefill c * 32: no LM head of its own, so the FLOPs scale with the tokens alone
        assert cal.mflop_prefill == pytest.approx(32 * cal.mflop_decode)
        assert cal.label.endswith(f"tp1 off c{cal.concurrency}") and cal.layers in (2, 3)
        figures = measured.result.summary
        assert figures is not None and figures.ttft_ms is not None and cal.ttft_ms == figures.ttft_ms.median


def test_the_fit_recovers_the_costs_that_made_the_cells_and_predicts_a_held_out_checkpoint(
        report: tuple[Path, list[Cell]]) -> None:
    folder, _ = report
    run, held = refit([folder], "synthetic", hold_out=["deep"])
    assert {c.layers for c in run.cells} == {2} and {m.cell.server.model_name for m in held} == {"deep"}
    fitted = fit(run)
    for name in ("a_ms", "s_ms", "p_ms", "t0_ms"):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUTH, name), rel=1e-6), name
    checked = check(run, held)
    assert len(checked) == 3
    assert median_error(checked) == pytest.approx(0.0, abs=1e-6)


def test_a_stored_figure_off_the_model_shows_in_its_ratio(report: tuple[Path, list[Cell]]) -> None:
    folder, _ = report
    run, _ = refit([folder], "synthetic")
    made = measured_cells(folder)[0]
    figures = made.result.summary
    assert figures is not None and figures.tpot_ms is not None and figures.ttft_ms is not None
    slower = summary(figures.output_throughput / 2, 2 * figures.tpot_ms.median, figures.ttft_ms.median)
    (checked,) = check(run, [Measured(made.report, made.cell, made.result.model_copy(update={"summary": slower}))])
    assert (checked.ttft, checked.tpot, checked.tok_s) == pytest.approx((1.0, 2.0, 0.5), rel=1e-6)


def test_the_command_writes_a_calibration_the_predictor_loads(report: tuple[Path, list[Cell]], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder, _ = report
    out = tmp_path / "calibration.json"
    main([str(folder), "--hold-out", "deep", "--out", str(out), "--measured", "made by the step model"])
    written = load_calibration(out)
    assert written.measured == "made by the step model" and len(written.cells) == 3 and written.probe_s > 0
    assert fit(written).a_ms == pytest.approx(TRUTH.a_ms, rel=1e-6)
    printed = capsys.readouterr().out
    assert "checked: median |measured / predicted - 1| 0.0% over 9 figures" in printed
