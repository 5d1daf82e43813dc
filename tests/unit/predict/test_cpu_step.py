"""The vLLM CPU step model: the formula for each kind of cell (prompts together or staggered), the kernels it asks
for, tensor parallelism, and the cells it declines. Kernel timings are injected (the cache a real run fills), so
every expected figure is exact arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.config.predict import PredictSpec
from harness.plan import Cell, expand
from harness.predict import NoPrediction, Prediction
from harness.predict.cpu_kernels import TIMED_TOKENS
from harness.predict.cpu_step import DEFAULT_ACCEPTANCE, EARLIER_DRAFT_STEPS, CpuStep, draft_multiple
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
GEMM_S = 0.010  # every streamed matrix, at every token count: 10 ms
LAYERS = 2  # the test checkpoint's trunk
MATRICES = 3  # its trunk's streamed matrices (the MTP layer's is the drafter's)
MFLOP_A_TOKEN = 2 * 128 * 128 / 1e6  # its one cached matrix


def cells(write_matrix: Callable[..., Path], tmp_path: Path, speculation: str = '["off"]') -> list[Cell]:
    model = write_checkpoint(tmp_path / "ckpt")
    return list(expand(load_matrix(write_matrix(MATRIX.format(model=model, speculation=speculation)))).cells)


SPEC = PredictSpec(accepted_tokens={2: 1.5})
FLAT_KERNELS = {f"{shape}/{n}t/1": GEMM_S
                for shape in ("16384x128@1", "128x16384@1", "16384x128@0.25", "128x128@1", "8192x128@1", "64x16384@1",
                              "8192x128@0.25", "64x128@1")
                for n in range(1, TIMED_TOKENS + 1)}
"""Every timing the model could ask for (the checkpoint's matrices, whole and halved by two ranks, at every timed
count), at GEMM_S each."""


REFERENCE = EngineCosts(a_ms=1.5, s_ms=0.1, p_ms=0.5, t0_ms=9.0, probe_s=1.0, source="stated for the test",
                        draft_steps={"mtp": 1.7})
"""Per layer: a 2-layer step's fixed cost is 3 ms; 0.5 ms per cached MFLOP."""


def predictor(cell: Cell) -> CpuStep:
    step = CpuStep(SPEC, speed_ratio=1.0, costs=REFERENCE)
    step.kernels.update(FLAT_KERNELS)
    return step


def engine_ms(seqs: int, tokens: int) -> float:
    """The engine's own cost of a step and its cached matrix's FLOPs."""
    r = REFERENCE
    return LAYERS * (r.a_ms + r.s_ms * seqs) + r.p_ms * MFLOP_A_TOKEN * tokens


def test_an_off_cell_is_one_prefill_step_then_one_step_per_token(write_matrix: Callable[..., Path],
                                                                 tmp_path: Path) -> None:
    found = [c for c in cells(write_matrix, tmp_path) if c.workload_name == "w"]
    out = predictor(found[0]).predict(found[0].server, found)
    gemm_ms = MATRICES * GEMM_S * 1e3
    for cell, prediction in zip(found, out, strict=True):
        assert isinstance(prediction, Prediction)
        c = cell.concurrency
        tpot = engine_ms(c, c) + gemm_ms
        ttft = REFERENCE.t0_ms + engine_ms(c, c * 8) + gemm_ms
        assert prediction.tpot_ms == pytest.approx(tpot)
        assert prediction.ttft_ms == pytest.approx(ttft)
        assert prediction.output_tok_s == pytest.approx(c * 16 / ((ttft + 15 * tpot) / 1e3))
        assert prediction.output_tok_s_per_gpu is None  # a CPU machine has no GPUs to divide by
        assert prediction.predictor == "cpu-step" and "engine step costs" in prediction.assumptions
        assert "prefilled in one step" in prediction.assumptions["arrivals"]


def mtp_draft(c: int, tokens: int) -> float:
    """One MTP drafting step: 1.7 x the trunk's fixed cost, its sequences, the MTP layer's streamed matrix."""
    r = REFERENCE
    return LAYERS * (1.7 * r.a_ms + r.s_ms * c) + GEMM_S * 1e3


def test_mtp_verifies_k_plus_one_tokens_and_divides_by_what_is_accepted(write_matrix: Callable[..., Path],
                                                                         tmp_path: Path) -> None:
    found = [c for c in cells(write_matrix, tmp_path, '[{method: mtp, k: 2}, {method: mtp, k: 3}]')
             if c.workload_name == "w" and c.concurrency == 1]
    out = predictor(found[0]).predict(found[0].server, found[:1]) + predictor(found[1]).predict(found[1].server,
                                                                                                 found[1:])
    k2, k3 = out
    assert isinstance(k2, Prediction) and isinstance(k3, Prediction)
    verify = engine_ms(1, 3) + MATRICES * GEMM_S * 1e3
    assert k2.tpot_ms == pytest.approx((verify + 2 * mtp_draft(1, 1)) / (1 + 1.5))
    assert k2.ttft_ms == pytest.approx(REFERENCE.t0_ms + engine_ms(1, 8) + MATRICES * GEMM_S * 1e3 + mtp_draft(1, 8))
    assert "1.5 accepted" in k2.assumptions["acceptance"]
    default = sum(DEFAULT_ACCEPTANCE**i for i in (1, 2, 3))
    assert f"{default:.2f} accepted" in k3.assumptions["acceptance"]


def test_speculation_staggers_later_prompts_into_decoding_steps(write_matrix: Callable[..., Path],
                                                                 tmp_path: Path) -> None:
    """At c2 of 32 requests, 2 start together and 30 arrive one at a time: each is prefilled inside a step the other
    sequence verifies in, after half an iteration's wait, and every other request's prefill lands in one's decode."""
    (cell,) = [c for c in cells(write_matrix, tmp_path, '[{method: mtp, k: 2}]')
               if c.workload_name == "w" and c.concurrency == 2]
    (out,) = predictor(cell).predict(cell.server, [cell])
    assert isinstance(out, Prediction)
    gemm = MATRICES * GEMM_S * 1e3
    iteration = engine_ms(2, 6) + gemm + 2 * mtp_draft(2, 2)
    mixed = engine_ms(2, 3 + 8) + gemm + 2 * mtp_draft(2, 2) + mtp_draft(2, 8)
    assert out.ttft_ms == pytest.approx(REFERENCE.t0_ms + iteration / 2 + mixed)
    assert out.tpot_ms == pytest.approx(iteration / 2.5 + (mixed - iteration) / 15)
    assert "one at a time" in out.assumptions["arrivals"]


def test_two_ranks_split_every_matrix_and_use_their_own_costs(write_matrix: Callable[..., Path],
                                                               tmp_path: Path) -> None:
    model = write_checkpoint(tmp_path / "ckpt")
    text = MATRIX.format(model=model, speculation='["off"]').replace("axes:\n", "axes:\n  parallel: [{tp: 2}]\n")
    found = [c for c in expand(load_matrix(write_matrix(text))).cells if c.workload_name == "w"]
    step = predictor(found[0])
    asked: list[str] = []
    step.kernels = _Recording(step.kernels, asked)
    out = step.predict(found[0].server, found)
    assert all(isinstance(o, Prediction) and "2 rank(s)" in o.assumptions["GEMMs"] for o in out)
    assert asked and all(key.split("x")[0] in {"8192", "64"} for key in asked)  # each rank's half of each matrix


class _Recording(dict[str, float]):
    def __init__(self, kernels: dict[str, float], asked: list[str]) -> None:
        super().__init__(kernels)
        self.asked = asked

    def __contains__(self, key: object) -> bool:
        self.asked.append(str(key))
        return super().__contains__(key)


@pytest.mark.parametrize(("axes", "reason"), [
    ('[{tp: 2, dp: 2}]', "tensor parallelism only"),
    ('[{tp: 4}]', "no cell at tp 4"),
])
def test_layouts_without_a_calibration_are_declined(write_matrix: Callable[..., Path], tmp_path: Path, axes: str,
                                                    reason: str) -> None:
    model = write_checkpoint(tmp_path / "ckpt")
    text = MATRIX.format(model=model, speculation='["off"]').replace("axes:\n", f"axes:\n  parallel: {axes}\n")
    found = list(expand(load_matrix(write_matrix(text))).cells)
    out = CpuStep(SPEC, speed_ratio=1.0).predict(found[0].server, found)
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


def test_int8_matrices_are_priced_at_their_own_rate(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    """A W8A8 export: the checkpoint's int8 matrix is priced at ``p_int8``, the bf16 ones at ``p``."""
    import torch
    from safetensors.torch import save_file

    model = write_checkpoint(tmp_path / "ckpt")
    save_file({"model.layers.1.self_attn.q_proj.weight": torch.zeros(64, 128, dtype=torch.int8)},
              str(model / "int8.safetensors"))
    (cell,) = [c for c in cells(write_matrix, tmp_path) if c.workload_name == "w" and c.concurrency == 1]
    step = CpuStep(SPEC, speed_ratio=1.0, costs=REFERENCE.model_copy(update={"p_int8_ms": 0.1}))
    step.kernels.update(FLAT_KERNELS)
    (out,) = step.predict(cell.server, [cell])
    assert isinstance(out, Prediction)
    int8_mflop = 2 * 64 * 128 / 1e6
    assert out.tpot_ms == pytest.approx(engine_ms(1, 1) + MATRICES * GEMM_S * 1e3 + 0.1 * int8_mflop)
    assert "1 int8 matrices' FLOPs at 0.1 ms per MFLOP" in out.assumptions["weights"]


def test_a_method_the_calibration_lacks_takes_the_earlier_baselines_drafting_step() -> None:
    assert draft_multiple(REFERENCE, "mtp") == (1.7, "fitted on the calibration's speculative c1 cells")
    multiple, source = draft_multiple(REFERENCE, "draft_model")
    assert multiple == EARLIER_DRAFT_STEPS["draft_model"] and "2026-11-23" in source and "another machine" in source

