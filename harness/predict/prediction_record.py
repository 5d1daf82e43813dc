"""What a predictor says about one cell, and where every number in it comes from.

A prediction is never a measurement: each record carries its predictor and version, the data it drew on (for
AIConfigurator, the engine version of its kernel tables against the version the matrix pins), every input it had to
assume (speculative acceptance, MoE routing, quant modes) and, where the predictor says, the share of the figure
backed by measured data. A cell the predictor cannot answer gets a ``NoPrediction`` with the reason, never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field


class Prediction(BaseModel):
    """Predicted serving figures of one cell (one server configuration at one concurrency and workload shape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    predictor: str = Field(description="registry name, e.g. 'aiconfigurator' or 'cpu-step'")
    predictor_version: str
    data_version: str | None = Field(None, description="the data the predictor drew on, e.g. 'sglang 0.5.14 "
                                     "tables on b200_sxm (matrix pins 0.5.23)'")
    ttft_ms: float = Field(ge=0)
    tpot_ms: float = Field(gt=0, description="per-user time per output token, speculation included")
    output_tok_s: float = Field(gt=0, description="output tokens per second of one replica, all users")
    output_tok_s_per_gpu: float | None = Field(None, description="output tok/s per GPU; None on a CPU machine")
    tok_s_user: float = Field(gt=0, description="output tokens per second one user sees")
    assumptions: dict[str, str] = Field(default_factory=dict, description="every input the predictor assumed")
    measured_share: float | None = Field(None, ge=0, le=1, description="share of the figure backed by measured "
                                         "data, where the predictor reports it")


class NoPrediction(BaseModel):
    """A cell no predictor could answer, and why (a model it cannot map, a GPU without data, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    predictor: str | None = Field(None, description="the predictor that declined; None when none applies")
    reason: str


PredictionOutcome = Prediction | NoPrediction


def stated_assumptions(predictions: Iterable[Prediction]) -> tuple[tuple[str, str, str], ...]:
    """Every assumption the predictions made, once per (predictor, what): a value shared by every cell stated once,
    values that vary per cell (a batch per rank, an acceptance per k) joined, in first-seen order."""
    values: dict[tuple[str, str], dict[str, None]] = {}
    for prediction in predictions:
        for key, value in prediction.assumptions.items():
            values.setdefault((prediction.predictor, key), {}).setdefault(value, None)
    return tuple((predictor, key, "; ".join(found)) for (predictor, key), found in values.items())
