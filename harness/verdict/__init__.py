"""Verdicts on a stored run: the regression gate (``gate``: ok / regressed / inconclusive per figure, each with its
interval) against the committed baseline (``baseline``: every figure per server launch, with the machine speed of
each), and the environment lock (``lock``), written by ``stage`` as ``gate.json`` and ``lock.json`` for the report.
"""

from harness.metrics.gateable import gated_metric
from harness.verdict.baseline import MIN_LAUNCHES, GateError, promote, read_baseline, write_baseline
from harness.verdict.gate import GateResult, check_gate_metrics
from harness.verdict.gate_row import GateRow, Status
from harness.verdict.gate_table import format_table
from harness.verdict.judge_run import GateVerdict, HistoryState, read_gate, record_stored, write_verdicts
from harness.verdict.lock import Drift, Lock, build_lock, drift, read_lock, write_lock

__all__ = [
    "build_lock", "check_gate_metrics", "drift", "Drift", "format_table", "gated_metric", "GateError", "GateResult",
    "GateRow", "Lock", "MIN_LAUNCHES", "promote", "read_baseline", "read_lock", "Status", "write_baseline",
    "write_lock", "write_verdicts", "GateVerdict", "HistoryState", "read_gate", "record_stored",
]
