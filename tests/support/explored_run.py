"""A stored run to explore, with earlier runs of the same matrix in its results history.

Four cells (speculation off and MTP k=2, at concurrency 1 and 4) on one B200 replica of 8 GPUs, each with its
requests on disk (40 completed with known TTFT and TPOT, a warm-up and a failure), a prediction for each cell but
one (declined, with its reason), and two earlier runs recorded in the history on this machine: the newer at 0.9x
this run's throughput and interactivity, the older at 0.8x and without the mtp2 c4 cell. The run itself is stored,
not yet judged: ``render(plan, store, record_run=True)`` records it (the history then holds three runs), judges it
and writes the report and the explorer.
"""

from __future__ import annotations

from pathlib import Path

from harness.calibration import Calibration
from harness.config import load_matrix
from harness.history import RunIdentity, record
from harness.load import RequestRecord, write_jsonl
from harness.load.records import ErrorInfo
from harness.plan import Cell, Plan, expand
from harness.predict import NoPrediction, PlanPredictions, Prediction, PredictionOutcome, write_predictions
from harness.result_records import CellResult
from harness.store import Store
from harness.verdict import build_lock

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_ok, summary

EXPLORED_MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4]") + """\
  speculation: ["off", {method: mtp, k: 2}]
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
slo: {ttft_p99_ms: 500, tpot_p50_ms: 25}
"""
GPUS = 8
FIGURES = {("off", 1): (800.0, 20.0), ("off", 4): (2400.0, 25.0), ("mtp2", 1): (1600.0, 10.0),
           ("mtp2", 4): (4000.0, 16.0)}
"""Output tok/s (the replica's) and median TPOT ms per (speculation, concurrency)."""
TTFT_SCALE = {("off", 1): 1.0, ("off", 4): 1.6, ("mtp2", 1): 0.9, ("mtp2", 4): 1.4}
"""Each cell's TTFTs: ``ttft_ms(i)`` times this."""
EARLIER = (("2026-11-01T09:00:00+00:00", "c0ffee01", 0.8), ("2026-11-02T09:00:00+00:00", "c0ffee02", 0.9))
"""The earlier runs, oldest first: when each started, its commit, its figures against this run's."""
MISSING_FROM_OLDEST = ("mtp2", 4)
DECLINED = ("mtp2", 4)
DECLINED_REASON = "no MTP data for this GPU"
REQUESTS = 40
OUTPUT_TOKENS = 8


def key(cell: Cell) -> tuple[str, int]:
    return cell.server.speculation.label, cell.concurrency


def ttft_ms(i: int) -> float:
    """The TTFT of the cell's i-th completed request: 30 ms upwards, 5 ms apart, in a shuffled order."""
    return 30.0 + 5.0 * ((i * 7) % REQUESTS)


def requests(tpot_ms: float, ttft_scale: float = 1.0) -> list[RequestRecord]:
    """A warm-up, ``REQUESTS`` completed requests (TTFT ``ttft_ms(i)`` x ``ttft_scale``, TPOT ``tpot_ms`` + i/10)
    and a failure."""
    done = []
    for i in range(REQUESTS):
        first, step = ttft_ms(i) * ttft_scale / 1000, (tpot_ms + i / 10) / 1000
        chunks = tuple(first + k * step for k in range(OUTPUT_TOKENS))
        done.append(RequestRecord(index=i, warmup=False, input_tokens=16, max_tokens=OUTPUT_TOKENS, send_time=0.1 * i,
                                  end_time=0.1 * i + chunks[-1], chunk_times=chunks, chunk_tokens=(1,) * OUTPUT_TOKENS,
                                  output_tokens=OUTPUT_TOKENS))
    warm = RequestRecord(index=0, warmup=True, input_tokens=16, max_tokens=OUTPUT_TOKENS, send_time=0.0, end_time=9.0,
                         chunk_times=(5.0, 9.0), chunk_tokens=(1, 1), output_tokens=2)
    failed = RequestRecord(index=REQUESTS, warmup=False, input_tokens=16, max_tokens=OUTPUT_TOKENS, send_time=4.0,
                           end_time=4.1, error=ErrorInfo(kind="http_status", message="500", status_code=500))
    return [warm, *done, failed]


def _record_earlier(plan: Plan, store: Store) -> None:
    lock = build_lock(plan, store)
    for i, (started_at, commit, level) in enumerate(EARLIER):
        identity = RunIdentity(f"earlier-{i}", plan.matrix.name, lock.matrix_sha256, lock.hardware, "0.1.0", commit,
                               started_at)
        cells = [c for c in plan.cells if i > 0 or key(c) != MISSING_FROM_OLDEST]
        results = [CellResult(cell_id=c.cell_id, label=c.label, server_id=c.server.server_id, status="ok",
                              started_at=started_at, finished_at=started_at,
                              summary=summary(FIGURES[key(c)][0] * level, FIGURES[key(c)][1] / level)) for c in cells]
        record(store.history_url, identity, results, Calibration())


def _prediction(cell: Cell) -> PredictionOutcome:
    if key(cell) == DECLINED:
        return NoPrediction(cell_id=cell.cell_id, predictor="aiconfigurator", reason=DECLINED_REASON)
    out, tpot = FIGURES[key(cell)]
    return Prediction(cell_id=cell.cell_id, predictor="aiconfigurator", predictor_version="0.12.0", ttft_ms=40.0,
                      tpot_ms=tpot * 1.25, output_tok_s=out / 1.25, tok_s_user=800.0 / tpot)


def explored_run(matrix_path: Path, root: Path, history: str | None = None) -> tuple[Plan, Store]:
    """The run of ``EXPLORED_MATRIX`` (written at ``matrix_path``) stored under ``root``, its earlier runs in the
    history (``history``: its URL; ``none`` records none)."""
    plan = expand(load_matrix(matrix_path))
    store = Store(root / "reports", plan.matrix.name, lock_dir=root / "lock", history=history)
    if history != "none":
        _record_earlier(plan, store)
    store.begin_run(fresh=True)
    for cell in plan.cells:
        out, tpot = FIGURES[key(cell)]
        store_ok(store, cell, summary(out, tpot))
        write_jsonl(store.records_path(cell), requests(tpot, TTFT_SCALE[key(cell)]))
    write_predictions(PlanPredictions({c.cell_id: _prediction(c) for c in plan.cells}), store.predictions_path)
    return plan, store
