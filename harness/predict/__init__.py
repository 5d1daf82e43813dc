"""Predictions before measurement: each cell's TTFT, TPOT and tok/s from a performance model, with every
assumption it made, so a plan can be judged (and its hardware chosen) before anything launches, and a run can say
how far its measurements landed from what was predicted.

Predictors are the entries of ``registry.PREDICTORS`` (entry-point group ``harness.predictors``): ``aiconfigurator``
(NVIDIA's AIConfigurator, for GPU cells; its library is imported only inside its predictor) and ``cpu-step`` (the vLLM
CPU engine's step cost, from kernels timed on this machine). The stage's one entry is ``predict_plan``: a ``Plan`` in,
``PlanPredictions`` out; a prediction is a ``Prediction`` record, never a measurement, and a cell no predictor can
answer is a ``NoPrediction`` with the reason."""

from harness.predict.plan_predictions import PlanPredictions, predict_plan, read_predictions, write_predictions
from harness.predict.prediction_record import NoPrediction, Prediction, PredictionOutcome, stated_assumptions
from harness.predict.predictor import PREDICTORS, Predictor, predictor_names

__all__ = [
    "NoPrediction", "PlanPredictions", "predict_plan", "Prediction", "PredictionOutcome", "Predictor",
    "predictor_names", "PREDICTORS", "read_predictions", "stated_assumptions", "write_predictions",
]
