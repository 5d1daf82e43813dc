"""The predict stage: each server configuration goes to the predictor that applies (or the matrix's choice), a cell
none covers gets the reason, answers are cached by content, and a run's predictions round-trip through their file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from harness.config import load_matrix
from harness.config.predict import PredictSpec
from harness.plan import Cell, ServerConfig, expand
from harness.predict import (
    PREDICTORS,
    NoPrediction,
    Prediction,
    PredictionOutcome,
    predict_plan,
    read_predictions,
    write_predictions,
)
from harness.predict import plan_predictions as predict_stage

MATRIX = """
name: p
hardware: {kind: gpu, gpu: H100, gpus_per_replica: 1}
models:
  m: {id: org/m, max_model_len: 1024}
workloads:
  w: {kind: random, input_tokens: 100, output_tokens: 50}
axes:
  runtime: [vllm, sglang]
  concurrency: [1, 8]
predict: {predictor: test-counting}
"""


@PREDICTORS.register
class Counting:
    """Answers vLLM servers only, TPOT = concurrency; counts its calls."""

    name: ClassVar[str] = "test-counting"
    calls: ClassVar[int] = 0

    def __init__(self, spec: PredictSpec, cache_dir: Path) -> None:
        self.spec = spec

    def applies(self, server: ServerConfig) -> bool:
        return server.runtime == "vllm"

    def cache_key(self) -> str:
        return "counting 1"

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        type(self).calls += 1
        return [Prediction(cell_id=c.cell_id, predictor=self.name, predictor_version="1", ttft_ms=10,
                           tpot_ms=float(c.concurrency), output_tok_s=100, tok_s_user=1000 / c.concurrency,
                           assumptions={"all": "of it"}) for c in cells]


@PREDICTORS.register
class Partial(Counting):
    """Answers concurrency 1 only (the rest: no prediction); records the cells it is asked."""

    name = "test-partial"
    asked: ClassVar[list[str]] = []

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        type(self).asked += [c.cell_id for c in cells]
        return [answer if c.concurrency == 1 else NoPrediction(cell_id=c.cell_id, predictor=self.name, reason="no")
                for c, answer in zip(cells, super().predict(server, cells), strict=True)]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(predict_stage, "CACHE_DIR", tmp_path / "cache")
    return tmp_path / "cache"


def test_each_server_goes_to_its_predictor_and_the_rest_say_why(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    predictions = predict_plan(plan)
    for cell in plan.cells:
        found = predictions.outcomes[cell.cell_id]
        if cell.server.runtime == "vllm":
            assert isinstance(found, Prediction) and found.tpot_ms == cell.concurrency
        else:
            assert isinstance(found, NoPrediction)
            assert found.reason == "predictor test-counting does not cover sglang on H100"
    assert predictions.predictors == ("test-counting",)


def test_answers_are_cached_by_content(write_matrix: Callable[..., Path], private_cache: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    before = Counting.calls
    first = predict_plan(plan)
    second = predict_plan(plan)
    assert Counting.calls == before + 1  # the second answer came from the cache
    assert second.outcomes == first.outcomes
    assert len(list(private_cache.glob("test-counting-*.json"))) == 1
    changed = expand(load_matrix(write_matrix(MATRIX.replace("{predictor: test-counting}",
                                                             "{predictor: test-counting, accepted_tokens: {1: 0.5}}"))))
    predict_plan(changed)
    assert Counting.calls == before + 2  # another predict: section is another question


def test_only_the_cells_without_a_prediction_are_asked_again(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX.replace("test-counting", "test-partial"))))
    vllm = [c for c in plan.cells if c.server.runtime == "vllm"]
    first = predict_plan(plan)
    assert sorted(Partial.asked) == sorted(c.cell_id for c in vllm)
    Partial.asked.clear()
    second = predict_plan(plan)
    assert Partial.asked == [c.cell_id for c in vllm if c.concurrency == 8]  # the answered one came from the cache
    assert second.outcomes == first.outcomes and list(second.outcomes) == list(first.outcomes)
    assert isinstance(second.outcomes[Partial.asked[0]], NoPrediction)


def test_no_predictor_for_the_hardware_is_a_reason(write_matrix: Callable[..., Path]) -> None:
    text = MATRIX.replace("predict: {predictor: test-counting}\n", "").replace("gpu: H100", "gpu: MI300X")
    plan = expand(load_matrix(write_matrix(text)))
    predictions = predict_plan(plan)
    reasons = {predictions.reason(c.cell_id) for c in plan.cells if c.server.runtime == "sglang"}
    assert reasons and all(r and "MI300X" in r for r in reasons)


def test_predictor_none_predicts_nothing_and_says_so(write_matrix: Callable[..., Path]) -> None:
    before = Counting.calls
    plan = expand(load_matrix(write_matrix(MATRIX.replace("{predictor: test-counting}", "{predictor: none}"))))
    predictions = predict_plan(plan)
    assert Counting.calls == before and predictions.predictors == ()
    assert {predictions.reason(c.cell_id) for c in plan.cells} == {"prediction turned off (predict.predictor: none)"}


def test_predictions_round_trip_through_their_file(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    predictions = predict_plan(expand(load_matrix(write_matrix(MATRIX))))
    write_predictions(predictions, tmp_path / "predictions.json")
    assert read_predictions(tmp_path / "predictions.json") == predictions
    assert read_predictions(tmp_path / "absent.json") is None


def test_a_corrupt_cache_file_is_a_miss(write_matrix: Callable[..., Path], private_cache: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    first = predict_plan(plan)
    [cached] = private_cache.glob("test-counting-*.json")
    cached.write_text('{"half a')  # a crash mid-write, say
    before = Counting.calls
    assert predict_plan(plan).outcomes == first.outcomes
    assert Counting.calls == before + 1  # predicted again, not read as a failure


def test_the_loads_a_concurrency_search_doubles_through_are_predicted_with_the_grid(
        write_matrix: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(predict_stage, "CACHE_DIR", tmp_path / "cache")
    text = MATRIX.replace("concurrency: [1, 8]", "concurrency: [1, 8, {search: slo, min: 1, max: 24}]")
    text = text.replace("name: p\n", "name: p\nslo: {ttft_ms: 1000}\n")
    plan = expand(load_matrix(write_matrix(text)))
    (vllm,) = [g for g in plan.groups if g.server.runtime == "vllm"]
    loads = [c.concurrency for c in predict_stage.search_loads(vllm)]
    assert loads == [1, 2, 4, 8, 16, 24]
    predictions = predict_plan(plan)
    for cell in predict_stage.search_loads(vllm):
        found = predictions.prediction(cell.cell_id)
        assert found is not None and found.tpot_ms == cell.concurrency
