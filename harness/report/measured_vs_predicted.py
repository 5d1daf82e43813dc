"""Predicted beside measured: each measured cell's measured ÷ predicted TTFT, TPOT and output tok/s, judged
against the cell's own launch-to-launch noise, and the two sentences the narrative says about it.

The predictions are the ones the run made before its first launch (``predictions.json``, written by the pipeline
through ``harness.predict``): nothing is predicted again here, so a report shows what was known before measuring.
A ratio above 1 means the measurement came out higher than predicted (slower for a latency, faster for tok/s).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

from harness.predict import Prediction, read_predictions, stated_assumptions
from harness.report.rows import CellRow
from harness.store import Store

UNKNOWN_NOISE_TOLERANCE = 0.15
"""With one launch a cell's noise is not measured; a ratio further than this from 1 is then flagged (a stated
rule, not a measurement)."""
FIGURES = (("TTFT", "ttft_ms.median"), ("TPOT", "tpot_ms.median"), ("out tok/s", "output_throughput"))


@dataclass(frozen=True, slots=True)
class PredictedRow:
    row: CellRow
    prediction: Prediction
    ratios: tuple[float | None, ...]
    """Measured ÷ predicted, in the order of ``FIGURES``."""
    noise: float | None
    """The largest relative launch-to-launch spread (MAD ÷ median) among the three figures; None with one launch."""

    @property
    def tolerance(self) -> float:
        return self.noise if self.noise is not None else UNKNOWN_NOISE_TOLERANCE

    @property
    def disagrees(self) -> bool:
        return any(r is not None and abs(r - 1) > self.tolerance for r in self.ratios)


@dataclass(frozen=True, slots=True)
class MetricAccuracy:
    name: str
    median: float
    low: float
    high: float
    cells: int


@dataclass(frozen=True, slots=True)
class PredictionView:
    rows: tuple[PredictedRow, ...]
    declined: tuple[tuple[CellRow, str], ...]
    """Measured cells the run could not predict, with the reason."""
    predictors: tuple[str, ...]
    accuracy: tuple[MetricAccuracy, ...]
    median_error: float | None
    """Median |measured ÷ predicted − 1| over every ratio of every cell."""
    assumptions: tuple[tuple[str, str, str], ...]
    noise_known: bool

    @property
    def unknown_tolerance(self) -> float:
        return UNKNOWN_NOISE_TOLERANCE

    @property
    def available(self) -> bool:
        return bool(self.rows or self.declined)

    @property
    def flagged(self) -> tuple[PredictedRow, ...]:
        return tuple(r for r in self.rows if r.disagrees)

    @property
    def median_noise(self) -> float | None:
        known = [r.noise for r in self.rows if r.noise is not None]
        return statistics.median(known) if known else None


def _measured(row: CellRow, key: str) -> float | None:
    return {"ttft_ms.median": row.ttft.median, "tpot_ms.median": row.tpot.median,
            "output_throughput": row.output_throughput}[key]


def _noise(row: CellRow) -> float | None:
    spreads = row.result.summary.spread if row.result and row.result.summary else {}
    found = [s.relative_mad for key, s in spreads.items() if key in dict(FIGURES).values() and len(s.values) > 1]
    known = [n for n in found if n is not None]
    return max(known) if known else None


def _ratio(measured: float | None, predicted: float) -> float | None:
    return measured / predicted if measured is not None and predicted > 0 else None


def prediction_view(rows: Mapping[str, CellRow], store: Store) -> PredictionView:
    """The run's stored predictions set beside its measured cells; empty when the run stored none."""
    stored = read_predictions(store.predictions_path)
    measured = [r for r in rows.values() if r.status == "ok"]
    if stored is None:
        return PredictionView((), (), (), (), None, (), False)
    found, declined = [], []
    for row in measured:
        prediction = stored.prediction(row.cell.cell_id)
        if prediction is None:
            declined.append((row, stored.reason(row.cell.cell_id) or "not predicted"))
            continue
        predicted = (prediction.ttft_ms, prediction.tpot_ms, prediction.output_tok_s)
        ratios = tuple(_ratio(_measured(row, key), value) for (_, key), value in zip(FIGURES, predicted, strict=True))
        found.append(PredictedRow(row, prediction, ratios, _noise(row)))
    accuracy = []
    for index, (name, _) in enumerate(FIGURES):
        values = [v for r in found if (v := r.ratios[index]) is not None]
        if values:
            accuracy.append(MetricAccuracy(name, statistics.median(values), min(values), max(values), len(values)))
    errors = [abs(v - 1) for r in found for v in r.ratios if v is not None]
    return PredictionView(rows=tuple(found), declined=tuple(declined),
                          predictors=tuple(sorted({r.prediction.predictor for r in found})),
                          accuracy=tuple(accuracy), median_error=statistics.median(errors) if errors else None,
                          assumptions=stated_assumptions(r.prediction for r in found),
                          noise_known=any(r.noise is not None for r in found))


def summary_sentences(view: PredictionView) -> str:
    """Two sentences: how close the prediction came (median and range of the ratio per figure) against the run's
    launch noise, and which cells it missed by more than their noise."""
    if not view.rows:
        return ""
    parts = [f"{a.name} {a.median:.2f}× [{a.low:.2f}, {a.high:.2f}]" for a in view.accuracy]
    noise = (f"the cells' own launch noise is {view.median_noise:.0%} (median relative MAD)"
             if view.median_noise is not None else
             f"the launch noise was not measured (one launch), so a miss beyond ±{UNKNOWN_NOISE_TOLERANCE:.0%} "
             "is flagged")
    error = f"{view.median_error:.0%}" if view.median_error is not None and math.isfinite(view.median_error) else "–"
    first = (f"Measured ÷ predicted ({', '.join(view.predictors)}, made before launch) over {len(view.rows)} cells: "
             f"{'; '.join(parts)} (median and range; median |ratio − 1| {error}), where {noise}.")
    flagged = view.flagged
    second = (f"{len(flagged)} of {len(view.rows)} cells disagree by more than that: the prediction is a guide to "
              "which cells to launch, not a substitute for measuring them." if flagged else
              "Every cell landed within that: the prediction could have stood in for this run's measurements.")
    return f"{first} {second}"
