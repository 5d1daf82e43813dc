"""The vLLM CPU step model: the formula for each kind of cell, the kernels it asks for, and the cells it declines.
Kernel timings are injected (the cache a real run fills), so every expected figure is exact arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.config.predict import PredictSpec
from harness.plan import Cell, expand
from harness.predict import NoPrediction, Prediction
from harness.predict.cpu_kernels import TIMED_TOKENS
from harness.predict.cpu_step import DEFAULT_ACCEPTANCE, DRAFT_STEPS, CpuStep, engine_threads
from harness.predict.cpu_step_fit import EngineCosts

from tests.support.checkpoints import write_checkpoint

MATRIX = """
name: cpu
hardware: {{kind: cpu, threads: 1}}
models:
  m: {{id: "{model}", max_model_len: 1024}}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 16}}
  agent: {{kind: agent, num_requests: 4, turns: {{min: 2, max: 3}}}}
axes:
  speculation: {speculation}
  concurrency: [1, 2]
predict: {{accepted_tokens: {{2: 1.5}}}}
"""
GEMM_S = 0.010  # every large matrix, at every token count: 10 ms


def cells(write_matrix: Callable[..., Path], tmp_path: Path, speculation: str = '["off"]') -> list[Cell]:
    model = write_checkpoint(tmp_path / "ckpt")
    return list(expand(load_matrix(write_matrix(MATRIX.format(model=model, speculation=speculation)))).cells)


SPEC = PredictSpec(accepted_tokens={2: 1.5})
FLAT_KERNELS = {f"{shape}/{n}t/1": GEMM_S for shape in ("16384x128@1", "128x16384@1", "16384x128@0.25")
                for n in range(1, TIMED_TOKENS + 1)}
"""Every timing the model could ask for (the checkpoint's large matrices at every timed count), at GEMM_S each."""


REFERENCE = EngineCosts(a_ms=3.0, s_ms=0.2, p_ms=0.05, t0_ms=9.0, probe_s=1.0, source="stated for the test")


def predictor(cell: Cell) -> CpuStep:
    step = CpuStep(SPEC, speed_ratio=1.0, costs=REFERENCE)
    step.kernels.update(FLAT_KERNELS)
    return step


def test_an_off_cell_is_one_prefill_step_then_one_step_per_token(write_matrix: Callable[..., Path],
                                                                 tmp_path: Path) -> None:
    found = [c for c in cells(write_matrix, tmp_path) if c.workload_name == "w"]
    out = predictor(found[0]).predict(found[0].server, found)
    r, gemm_ms = REFERENCE, 3 * GEMM_S * 1e3
    for cell, prediction in zip(found, out, strict=True):
        assert isinstance(prediction, Prediction)
        c = cell.concurrency
        tpot = r.a_ms + r.s_ms * c + gemm_ms
        ttft = r.t0_ms + r.a_ms + r.s_ms * c + r.p_ms * (c * 8 - c) + gemm_ms
        assert prediction.tpot_ms == pytest.approx(tpot)
        assert prediction.ttft_ms == pytest.approx(ttft)
        assert prediction.output_tok_s == pytest.approx(c * 16 / ((ttft + 15 * tpot) / 1e3))
        assert prediction.output_tok_s_per_gpu is None  # a CPU machine has no GPUs to divide by
        assert prediction.predictor == "cpu-step" and "engine step costs" in prediction.assumptions


def test_mtp_verifies_k_plus_one_tokens_and_divides_by_what_is_accepted(write_matrix: Callable[..., Path],
                                                                         tmp_path: Path) -> None:
    found = [c for c in cells(write_matrix, tmp_path, '[{method: mtp, k: 2}, {method: mtp, k: 3}]')
             if c.workload_name == "w" and c.concurrency == 1]
    out = predictor(found[0]).predict(found[0].server, found[:1]) + predictor(found[1]).predict(found[1].server,
                                                                                                 found[1:])
    r = REFERENCE
    k2, k3 = out
    assert isinstance(k2, Prediction) and isinstance(k3, Prediction)
    verify = r.a_ms + r.s_ms + r.p_ms * 2 + 3 * GEMM_S * 1e3
    draft = DRAFT_STEPS["mtp"] * r.a_ms + r.s_ms + GEMM_S * 1e3  # the MTP layer's one large matrix
    assert k2.tpot_ms == pytest.approx((verify + 2 * draft) / (1 + 1.5))
    assert "1.5 accepted" in k2.assumptions["acceptance"]
    default = sum(DEFAULT_ACCEPTANCE**i for i in (1, 2, 3))
    assert f"{default:.2f} accepted" in k3.assumptions["acceptance"]


@pytest.mark.parametrize(("axes", "reason"), [
    ('[{tp: 2}]', "covers one rank"),
])
def test_more_than_one_rank_is_declined(write_matrix: Callable[..., Path], tmp_path: Path, axes: str,
                                        reason: str) -> None:
    model = write_checkpoint(tmp_path / "ckpt")
    text = MATRIX.format(model=model, speculation='["off"]').replace("axes:\n", f"axes:\n  parallel: {axes}\n")
    found = list(expand(load_matrix(write_matrix(text))).cells)
    out = predictor(found[0]).predict(found[0].server, found)
    assert all(isinstance(o, NoPrediction) and reason in o.reason for o in out)


def test_unknown_lengths_and_missing_checkpoints_are_declined(write_matrix: Callable[..., Path],
                                                              tmp_path: Path) -> None:
    found = cells(write_matrix, tmp_path)
    agent = [c for c in found if c.workload_name == "agent"]
    (out,) = predictor(agent[0]).predict(agent[0].server, agent[:1])
    assert isinstance(out, NoPrediction) and "lengths are not known" in out.reason
    (tmp_path / "ckpt" / "config.json").unlink()
    (gone,) = CpuStep(SPEC, speed_ratio=1.0, costs=REFERENCE).predict(found[0].server, found[:1])
    assert isinstance(gone, NoPrediction) and "not on disk" in gone.reason


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (8, 7)])
def test_the_engine_keeps_a_core_for_its_scheduler(monkeypatch: pytest.MonkeyPatch, cores: int, threads: int) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert engine_threads() == threads
