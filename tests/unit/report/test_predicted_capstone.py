"""The predicted capstone's evidence: the lecture's levers over pairs of predicted cells that differ on one axis, a pair
priced on a substituted value of that axis left out, and the frontier of tok/s per device against tok/s per user."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.plan import Cell, expand
from harness.predict import Prediction
from harness.report.predicted_capstone import PredictedCell, _levers, _pareto

MATRIX = """
name: levers
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}
models:
  m: {id: org/m, max_model_len: 4096}
workloads:
  w: {kind: random, input_tokens: 100, output_tokens: 50}
axes:
  runtime: [sglang]
  parallel: [{tp: 16, ep: 8}, {tp: 16, ep: 16}]
  concurrency: [16, 64]
"""


def cells(write_matrix: Callable[..., Path]) -> list[Cell]:
    return list(expand(load_matrix(write_matrix(MATRIX))).cells)


def predicted(cell: Cell, tok_s: float, substituted: bool = False) -> PredictedCell:
    said = {"moe layout": "modelled as EP 4 x MoE TP 4"} if substituted else {}
    prediction = Prediction(cell_id=cell.cell_id, predictor="p", predictor_version="1", ttft_ms=100, tpot_ms=10,
                            output_tok_s=tok_s, output_tok_s_per_gpu=tok_s / 16, tok_s_user=100, assumptions=said)
    return PredictedCell(cell, prediction, 16, None, True)


def test_the_ep_lever_pairs_cells_that_differ_on_ep_alone(write_matrix: Callable[..., Path]) -> None:
    found = cells(write_matrix)
    rate = {(8, 16): 1000.0, (16, 16): 1100.0, (8, 64): 2000.0, (16, 64): 2400.0}
    priced = [predicted(c, rate[(c.server.parallel.ep, c.concurrency)]) for c in found]
    (ep,) = [lever for lever in _levers(priced) if lever.claim.axis == "parallel"]
    # $/MTok changes by tok/s per device before / after - 1: 1000/1100 - 1 and 2000/2400 - 1
    assert ep.pairs == 2 and ep.median_pct == pytest.approx(100 * ((1000 / 1100 - 1) + (2000 / 2400 - 1)) / 2)


def test_a_pair_priced_on_a_substituted_layout_says_nothing_of_the_ep_lever(write_matrix: Callable[..., Path]) -> None:
    found = cells(write_matrix)
    priced = [predicted(c, 1000.0, substituted=c.concurrency == 64) for c in found]
    (ep,) = [lever for lever in _levers(priced) if lever.claim.axis == "parallel"]
    assert ep.pairs == 1  # the c64 pair is left out; the concurrency lever still sees every cell
    (c16_64,) = [lever for lever in _levers(priced) if lever.claim.axis == "concurrency" and lever.claim.before == "16"]
    assert c16_64.pairs == 2


def test_the_frontier_keeps_the_cells_no_other_beats_on_both(write_matrix: Callable[..., Path]) -> None:
    found = cells(write_matrix)
    a, b, c = (predicted(cell, tok_s) for cell, tok_s in zip(found, (1000.0, 2000.0, 1500.0), strict=False))
    b = PredictedCell(b.cell, b.prediction.model_copy(update={"tok_s_user": 50}), 16, None, True)
    assert _pareto([a, b, c]) == (c, b)  # a: as fast per user as c, slower per device; b: fastest per device
