"""The AIConfigurator predictor: registered, GPU-only, keyed by what decides its answers, and one real estimate
checked against a committed value (skipped only where aiconfigurator is not installed)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.config import load_matrix
from harness.config.hardware import CpuHardware
from harness.config.predict import PredictSpec
from harness.config.workloads import ToolCallsWorkload
from harness.plan import Cell, expand
from harness.predict import NoPrediction, Prediction
from harness.predict.aiconfigurator import AiConfigurator, measured_share
from harness.predict.predictor import predictor_class

MATRICES = Path(__file__).resolve().parents[3] / "matrices"
needs_aiconfigurator = pytest.mark.skipif(
    importlib.util.find_spec("aiconfigurator") is None,
    reason="aiconfigurator is not installed (pip install aiconfigurator==0.12.0 aiconfigurator-core==0.12.0)")

# AIConfigurator 0.12.0, SILICON mode (deterministic), sglang 0.5.14 tables on b200_sxm: DeepSeek-V3.1 FP8 (V3's
# config), TP2 x DP8, MoE TP2 x EP8, MTP k=3 accepting 1.7, 1k/1k, c64 (batch 8 per DP rank). Recorded 2026-11-25.
COMMITTED = {"ttft_ms": 756.6097942314558, "tpot_ms": 20.271032447100612, "output_tok_s": 3025.9815572339826,
             "output_tok_s_per_gpu": 189.1238473271239, "tok_s_user": 49.33147843404647}


@functools.cache
def _cells(matrix: str) -> tuple[Cell, ...]:
    return expand(load_matrix(MATRICES / matrix)).cells


def _cell(matrix: str, **selector: Any) -> Cell:
    return next(cell for cell in _cells(matrix) if cell.matches(selector))


def _ds_mtp3_c64() -> Cell:
    return _cell("deepseek-v31-b200.yaml", runtime="sglang", precision="fp8", parallel="tp2-dp8-ep8",
                 speculation="mtp3", concurrency=64)


def test_registered_and_gpu_only() -> None:
    assert predictor_class("aiconfigurator") is AiConfigurator
    predictor = AiConfigurator(PredictSpec())
    server = _ds_mtp3_c64().server
    assert predictor.applies(server)
    assert not predictor.applies(server.model_copy(update={"hardware": CpuHardware()}))


def test_cache_key_names_the_versions_and_follows_the_predict_section() -> None:
    key = AiConfigurator(PredictSpec()).cache_key()
    assert "aiconfigurator 0.12.0" in key and "sglang 0.5.14" in key and "vllm 0.24.0" in key
    assert AiConfigurator(PredictSpec(accepted_tokens={3: 2.0})).cache_key() != key


def test_without_aiconfigurator_every_cell_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    cell = _ds_mtp3_c64()
    [outcome] = AiConfigurator(PredictSpec()).predict(cell.server, [cell])
    assert isinstance(outcome, NoPrediction) and outcome.cell_id == cell.cell_id
    assert "pip install aiconfigurator==0.12.0 aiconfigurator-core==0.12.0" in outcome.reason


def test_another_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "0.13.0")
    cell = _ds_mtp3_c64()
    [outcome] = AiConfigurator(PredictSpec()).predict(cell.server, [cell])
    assert isinstance(outcome, NoPrediction) and "aiconfigurator 0.13.0 is installed" in outcome.reason


def test_measured_share_weights_sections_by_their_time() -> None:
    result = SimpleNamespace(
        per_ops_data={"mix_step": {"a": 3.0, "b": 1.0}, "genonly_step": {"c": 2.0, "d": 2.0},
                      "scheduling": {"num_mix_steps": 1, "mix_step_latency_ms": 4.0, "num_genonly_steps": 3,
                                     "genonly_step_latency_ms": 4.0}},
        per_ops_source={"mix_step": {"a": "silicon", "b": "empirical"}, "genonly_step": {"c": "silicon", "d": "mixed"}},
        ttft=0.0, tpot=0.0, osl=2)
    # mix: 3/4 measured, weight 4; decode-only: (2 + 2/2)/4 measured, weight 12
    assert measured_share(result) == pytest.approx((0.75 * 4 + 0.75 * 12) / 16)
    assert measured_share(SimpleNamespace(per_ops_data=None, per_ops_source=None, ttft=1.0, tpot=1.0, osl=2)) is None


@needs_aiconfigurator
def test_one_real_estimate_matches_the_committed_value() -> None:
    cell = _ds_mtp3_c64()
    [outcome] = AiConfigurator(PredictSpec()).predict(cell.server, [cell])
    assert isinstance(outcome, Prediction), outcome
    assert {key: getattr(outcome, key) for key in COMMITTED} == pytest.approx(COMMITTED, rel=1e-6)
    assert outcome.cell_id == cell.cell_id and outcome.predictor_version == "0.12.0"
    assert outcome.data_version == "sglang 0.5.14 tables on b200_sxm; the matrix pins 0.5.23"
    assert outcome.tok_s_user == pytest.approx(1000 / outcome.tpot_ms, rel=1e-3)
    assert outcome.output_tok_s_per_gpu == pytest.approx(outcome.output_tok_s / 16)  # output tokens over 16 GPUs
    assert outcome.measured_share is not None and 0 < outcome.measured_share < 1
    assert "1.7 accepted draft tokens per step at k=3" in outcome.assumptions["acceptance"]


@needs_aiconfigurator
def test_a_refusal_and_an_unmappable_cell_are_no_predictions() -> None:
    oom = _cell("deepseek-v31-b200-pd.yaml", topology="colocated", workload="prefill-heavy-8k1k", concurrency=256)
    tools = oom.model_copy(update={"workload_name": "tools", "workload": ToolCallsWorkload()})
    outcomes = AiConfigurator(PredictSpec()).predict(oom.server, [oom, tools])
    assert [outcome.cell_id for outcome in outcomes] == [oom.cell_id, tools.cell_id]
    refused, unmapped = outcomes
    assert isinstance(refused, NoPrediction) and isinstance(unmapped, NoPrediction)
    assert refused.reason.startswith("AIConfigurator refused: RuntimeError: OOM")
    assert unmapped.reason.startswith("workload 'tools' has no mean prompt/output lengths")


@needs_aiconfigurator
def test_a_routing_distribution_reaches_the_moe_tables() -> None:
    api = importlib.import_module("aiconfigurator.cli.api")
    builder = api._build_model_config
    cell = _ds_mtp3_c64()
    [balanced] = AiConfigurator(PredictSpec(moe_routing="balanced")).predict(cell.server, [cell])
    [default] = AiConfigurator(PredictSpec(moe_routing="power_law_1.01")).predict(cell.server, [cell])
    assert isinstance(balanced, Prediction) and isinstance(default, Prediction)
    assert default.tpot_ms == pytest.approx(COMMITTED["tpot_ms"], rel=1e-6)  # 1.01 is DeepSeek's default
    assert balanced.tpot_ms != pytest.approx(default.tpot_ms, rel=1e-3)
    assert api._build_model_config is builder  # the wrapper is gone after the call


@needs_aiconfigurator
def test_an_nvl72_prefill_decode_cell_is_predicted_on_the_substituted_moe_layout() -> None:
    # AIConfigurator refuses the matrix's EP 8 x MoE TP 2 in disaggregated mode on gb200 ("Cross-node EP requires
    # pure expert parallelism"); the mapping asks for EP 4 x MoE TP 4 and says so.
    cell = _cell("deepseek-v31-nvl72.yaml", precision="fp4", parallel="tp2-dp8-ep8", speculation="mtp3",
                 topology="1p1d", concurrency=64)
    [outcome] = AiConfigurator(PredictSpec()).predict(cell.server, [cell])
    assert isinstance(outcome, Prediction), outcome
    assert outcome.cell_id == cell.cell_id
    assert outcome.data_version == "sglang 0.5.14 tables on gb200; the matrix pins 0.5.23"
    assert outcome.ttft_ms > 0 and outcome.tpot_ms > 0
    assert outcome.output_tok_s_per_gpu == pytest.approx(outcome.output_tok_s / 32)  # 1P1D: 2 x 16 GPUs
    assert outcome.assumptions["moe layout"].startswith("P/D workers' MoE modelled as EP 4 x MoE TP 4")
