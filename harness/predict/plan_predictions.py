"""The predict stage's entry: a plan in, one prediction (or the reason for none) per cell out.

Cells are handed to a predictor one server configuration at a time, so a predictor can compute once per
configuration and read every concurrency from that. The predictor is the matrix's ``predict.predictor`` or the
first registered one that applies to the cell's hardware. Answers are cached by content under
``build/predict-cache/`` (this module owns that folder; a predictor may keep its own files in it under its own
name): the same cells, assumptions and predictor version give the same file, so a warm ``harness plan`` does not
predict again. Only predictions are kept: a cell without one is asked again (a checkpoint may be on disk by then),
and only it, so one such cell (an agent workload's, whose lengths no plan knows) does not cost its configuration's
other cells a new prediction each plan. The run's own copy is ``predictions.json`` in its report folder
(``Store.predictions_path``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from harness.plan.cells import Cell, Plan, ServerConfig, ServerGroup
from harness.predict.prediction_record import NoPrediction, Prediction, PredictionOutcome
from harness.predict.predictor import Predictor, predictor_class, predictor_names
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside

CACHE_DIR = Path(__file__).resolve().parents[2] / "build" / "predict-cache"
_OUTCOMES = TypeAdapter(dict[str, Prediction | NoPrediction])


@dataclass(frozen=True)
class PlanPredictions:
    """Every cell's outcome, by cell id."""

    outcomes: Mapping[str, PredictionOutcome]

    def prediction(self, cell_id: str) -> Prediction | None:
        outcome = self.outcomes.get(cell_id)
        return outcome if isinstance(outcome, Prediction) else None

    def reason(self, cell_id: str) -> str | None:
        outcome = self.outcomes.get(cell_id)
        return outcome.reason if isinstance(outcome, NoPrediction) else None

    @property
    def predictors(self) -> tuple[str, ...]:
        return tuple(sorted({o.predictor for o in self.outcomes.values() if isinstance(o, Prediction)}))


OFF = "none"
"""``predict.predictor`` that turns prediction off."""


def _predictor_for(plan: Plan, server: ServerConfig, made: dict[str, Predictor]) -> Predictor | str:
    """The predictor for ``server`` (built once per stage call), or why there is none."""
    forced = plan.matrix.predict.predictor
    if forced == OFF:
        return "prediction turned off (predict.predictor: none)"
    for name in ([forced] if forced else predictor_names()):
        if name not in made:
            made[name] = predictor_class(name)(plan.matrix.predict, CACHE_DIR)
        if made[name].applies(server):
            return made[name]
    hardware = getattr(server.hardware, "gpu", server.hardware.kind)
    if forced:
        return f"predictor {forced} does not cover {server.runtime} on {hardware}"
    return f"no predictor covers {server.runtime} on {hardware} (known: {', '.join(predictor_names())})"


def _cache_path(predictor: Predictor, plan: Plan, server: ServerConfig, cell_ids: list[str]) -> Path:
    key = json.dumps({"predictor": predictor.cache_key(), "server": server.server_id, "cells": cell_ids,
                      "spec": plan.matrix.predict.model_dump(mode="json")}, sort_keys=True)
    return CACHE_DIR / f"{predictor.name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _read_cache(path: Path) -> dict[str, PredictionOutcome] | None:
    """A cached answer, or None when there is none or it does not parse (damaged or of another version: set aside,
    and the predictor answers afresh)."""
    return load_or_set_aside(path, _OUTCOMES.validate_json)


def search_loads(group: ServerGroup) -> list[Cell]:
    """The probes a concurrency search may take while it doubles its load (``min``, twice that, ... up to ``max``):
    known before the run, so predicted with the grid. The loads it bisects to are chosen by the measurements, and
    stay unpredicted."""
    cells = []
    for search in group.searches:
        if not search.integral:
            continue
        load = search.spec.min
        while load < search.spec.max:
            cells.append(search.probe(load))
            load *= 2
        cells.append(search.probe(search.spec.max))
    return cells


def predict_plan(plan: Plan, *, cache: bool = True) -> PlanPredictions:
    """Predict every cell of ``plan``, and the loads its concurrency searches may double through."""
    made: dict[str, Predictor] = {}
    outcomes: dict[str, PredictionOutcome] = {}
    for group in plan.groups:
        cells = list({c.cell_id: c for c in [*group.cells, *search_loads(group)]}.values())
        predictor = _predictor_for(plan, group.server, made)
        if isinstance(predictor, str):
            outcomes.update({c.cell_id: NoPrediction(cell_id=c.cell_id, reason=predictor) for c in cells})
            continue
        kept: dict[str, PredictionOutcome] = {}
        asked = cells
        try:
            path = _cache_path(predictor, plan, group.server, [c.cell_id for c in cells])
            cached = (_read_cache(path) or {}) if cache else {}
            kept = {cell_id: o for cell_id, o in cached.items() if isinstance(o, Prediction)}
            asked = [c for c in cells if c.cell_id not in kept]
            answered = predictor.predict(group.server, asked) if asked else []
        except Exception as exc:  # noqa: BLE001  (a predictor's fault is that cell's missing prediction, said)
            why = f"{predictor.name} failed: {type(exc).__name__}: {exc}"
            answered = [NoPrediction(cell_id=c.cell_id, predictor=predictor.name, reason=why) for c in asked]
        else:
            predicted: dict[str, PredictionOutcome] = {o.cell_id: o for o in answered if isinstance(o, Prediction)}
            if cache and predicted:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, _OUTCOMES.dump_json(kept | predicted, indent=1))
        found = kept | {outcome.cell_id: outcome for outcome in answered}
        outcomes.update({c.cell_id: found[c.cell_id] for c in cells if c.cell_id in found})
    return PlanPredictions(outcomes)


def write_predictions(predictions: PlanPredictions, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, _OUTCOMES.dump_json(dict(predictions.outcomes), indent=1))


def read_predictions(path: Path) -> PlanPredictions | None:
    """The run's stored predictions, or None when the run made none (an older run, or one written before this)."""
    outcomes = load_or_set_aside(path, _OUTCOMES.validate_json)
    return None if outcomes is None else PlanPredictions(outcomes)
