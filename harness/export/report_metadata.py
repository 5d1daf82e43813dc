"""The harness's own extras in a Benchmark Report (``results.observability.metadata``): what it measured or judged
that llm-d's vocabulary has no field for.

Every value is copied from what the run stored (``harness.export.stored_cell``), under the harness's own names and
units; a block the run has nothing for is left out, never filled with a guess. The blocks:

- ``harness``: which run, cell and launch the report is, the lock's harness version, the measured phase's seconds,
  warm-up requests excluded, failed requests by kind;
- ``figures``: goodput, interactivity, per-GPU throughput, error rate;
- ``speculation``: the server's acceptance counters (rate, length, per draft position) and the per-request
  acceptance lengths' median and 10th/90th percentiles;
- ``server`` / ``client``: the server's own histograms, prefix cache and counters over the cell; how busy the
  client was;
- ``spread``: each figure's median and spread across the launches (or repeats) the pooled figures come from;
- ``parity``: the cell's accuracy-parity verdict; ``prediction``: the prediction made before launch and measured
  ÷ predicted; ``gate``: the run's gate verdict and this cell's rows; ``power``: NVML energy and tok/s per MW.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.export.stored_cell import StoredCell
from harness.load.cpu_watch import ClientLoad
from harness.metrics.spread import Spread
from harness.servers.prometheus import ServerStats, SpeculationStats


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CellIdentity(_Strict):
    matrix: str
    run_id: str | None = None
    cell_id: str
    cell_label: str
    server_id: str
    launch: int | None = None
    """None: the cell's pooled result; k: launch k's own."""
    launches: int
    """Server launches the figures pool (1 for one launch's report)."""
    harness_version: str | None = None
    harness_commit: str | None = None
    harness_dirty: bool | None = None
    measured_s: float
    """The measured phase's wall time (first measured send to last measured finish), summed over launches."""
    warmup_excluded: int
    error_kinds: dict[str, int]


class Figures(_Strict):
    goodput_req_s: float | None = None
    interactivity_tok_s_user: float | None = None
    output_tok_s_per_gpu: float | None = None
    total_tok_s_per_gpu: float | None = None
    error_rate: float


class RequestAcceptanceFigures(_Strict):
    source: str
    requests: int
    median: float
    p10: float
    p90: float


class Speculation(_Strict):
    counters: SpeculationStats | None = None
    per_request: RequestAcceptanceFigures | None = None


class ParityHeadline(_Strict):
    passed: bool | None = None
    conclusive: bool
    delta_pp: float | None = None
    overall_accuracy: float | None = None
    decoding: str | None = None
    rule: str
    reason: str


class PredictionCheck(_Strict):
    predictor: str | None = None
    predictor_version: str | None = None
    data_version: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    output_tok_s: float | None = None
    measured_over_predicted: dict[str, float] | None = None
    """``ttft_ms.median``, ``tpot_ms.median`` and ``output_throughput``, each measured ÷ predicted."""
    declined: str | None = None
    """Why no prediction was made for this cell."""


class GateFigure(_Strict):
    metric: str
    unit: str
    status: str
    baseline: float | None = None
    current: float | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    note: str = ""


class GateCheck(_Strict):
    verdict: str | None = None
    """The run's verdict (PASS, FAIL, INCONCLUSIVE); None when the gate could not compare (``error`` says why)."""
    baseline: str
    error: str | None = None
    figures: tuple[GateFigure, ...] = ()
    """This cell's rows of the gate."""


class Power(_Strict):
    scope: str
    devices: int
    driver_version: str | None = None
    power_w_per_device_mean: float | None = None
    power_w_total_mean: float | None = None
    energy_j_total: float | None = None
    energy_source: str | None = None
    energy_j_per_output_token: float | None = None
    tok_s_per_mw: float | None = None
    note: str | None = None


class HarnessMetadata(_Strict):
    harness: CellIdentity
    figures: Figures
    speculation: Speculation | None = None
    server: ServerStats | None = None
    client: ClientLoad | None = None
    spread: dict[str, Spread] | None = None
    parity: ParityHeadline | None = None
    prediction: PredictionCheck | None = None
    gate: GateCheck | None = None
    power: Power | None = None


def _identity(stored: StoredCell) -> CellIdentity:
    lock, s = stored.run.lock, stored.summary
    return CellIdentity(
        matrix=stored.run.matrix, run_id=stored.run.run_id, cell_id=stored.cell.cell_id, cell_label=stored.cell.label,
        server_id=stored.cell.server.server_id, launch=stored.launch, launches=s.launches,
        harness_version=lock.harness.version if lock else None, harness_commit=lock.harness.commit if lock else None,
        harness_dirty=lock.harness.dirty if lock else None, measured_s=s.duration_s, warmup_excluded=s.warmup_excluded,
        error_kinds=dict(s.error_kinds))


def _speculation(stored: StoredCell) -> Speculation | None:
    s = stored.summary
    per_request = None
    if s.acceptance_per_request is not None and s.acceptance_per_request.lengths:
        lengths = np.asarray(s.acceptance_per_request.lengths, dtype=float)
        p10, p50, p90 = (float(v) for v in np.percentile(lengths, [10, 50, 90]))
        per_request = RequestAcceptanceFigures(source=s.acceptance_per_request.source, requests=int(lengths.size),
                                               median=p50, p10=p10, p90=p90)
    if s.speculation is None and per_request is None:
        return None
    return Speculation(counters=s.speculation, per_request=per_request)


def _parity(stored: StoredCell) -> ParityHeadline | None:
    p = stored.parity
    if p is None:
        return None
    return ParityHeadline(passed=p.passed, conclusive=p.conclusive, delta_pp=p.delta_pp,
                          overall_accuracy=p.overall_accuracy, decoding=p.decoding, rule=p.rule, reason=p.reason)


def _prediction(stored: StoredCell) -> PredictionCheck | None:
    cell_id, s = stored.cell.cell_id, stored.summary
    prediction = stored.run.predictions.get(cell_id)
    if prediction is None:
        declined = stored.run.declined.get(cell_id)
        return PredictionCheck(declined=declined) if declined else None
    measured = {"ttft_ms.median": (s.ttft_ms.median if s.ttft_ms else None, prediction.ttft_ms),
                "tpot_ms.median": (s.tpot_ms.median if s.tpot_ms else None, prediction.tpot_ms),
                "output_throughput": (s.output_throughput, prediction.output_tok_s)}
    ratios = {name: value / predicted for name, (value, predicted) in measured.items()
              if value is not None and predicted > 0}
    return PredictionCheck(predictor=prediction.predictor, predictor_version=prediction.predictor_version,
                           data_version=prediction.data_version, ttft_ms=prediction.ttft_ms,
                           tpot_ms=prediction.tpot_ms, output_tok_s=prediction.output_tok_s,
                           measured_over_predicted=ratios or None)


def _gate(stored: StoredCell) -> GateCheck | None:
    verdict = stored.run.gate
    if verdict is None or stored.launch is not None:
        return None  # the gate judges the pooled cell, never one launch alone
    result = verdict.result
    rows = tuple(GateFigure(metric=r.metric, unit=r.unit, status=r.status, baseline=r.baseline, current=r.current,
                            ratio=r.ratio, low=r.low, high=r.high, note=r.note)
                 for r in (result.rows if result else ()) if r.label == stored.cell.label)
    return GateCheck(verdict=result.verdict if result else None, baseline=verdict.baseline, error=verdict.error,
                     figures=rows)


def _power(stored: StoredCell) -> Power | None:
    t = stored.telemetry
    if t is None or not t.available:
        return None  # no NVML during the cell: nothing measured, nothing stated
    note = ("recorded during the cell's last launch to run" if stored.summary.launches > 1 else None)
    return Power(scope=t.power_scope, devices=t.device_count, driver_version=t.driver_version,
                 power_w_per_device_mean=t.power_w_per_device_mean, power_w_total_mean=t.power_w_total_mean,
                 energy_j_total=t.energy_j_total, energy_source=t.energy_source,
                 energy_j_per_output_token=t.energy_j_per_output_token, tok_s_per_mw=t.tok_s_per_mw, note=note)


def harness_metadata(stored: StoredCell) -> HarnessMetadata:
    """The extras of one report, each block from what the run stored."""
    s = stored.summary
    figures = Figures(goodput_req_s=s.goodput, interactivity_tok_s_user=s.interactivity,
                      output_tok_s_per_gpu=s.output_throughput_per_gpu,
                      total_tok_s_per_gpu=s.total_token_throughput_per_gpu, error_rate=s.error_rate)
    return HarnessMetadata(harness=_identity(stored), figures=figures, speculation=_speculation(stored),
                           server=s.server, client=s.client, spread=dict(s.spread) or None, parity=_parity(stored),
                           prediction=_prediction(stored), gate=_gate(stored), power=_power(stored))
