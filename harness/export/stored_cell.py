"""What is stored about each measured cell of a run, gathered once from disk for the exporters.

A measured cell is one whose ``summary.json`` says ``ok``; failed and unrun cells have no figures to export and are
listed with the reason instead. A cell measured on several server launches gives one ``StoredCell`` for its pooled
result and one per launch (``launches/<k>/``). What belongs to the cell as a whole (its parity verdict, its gate
rows, its NVML telemetry, which the last launch to run wrote) goes with the pooled one only; a launch's own
figures, records and the prediction made before the run go with each.

Every file is read through the module that owns its schema (``harness.store`` says which); nothing is judged or
computed again here.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.load.records import RequestRecord, read_jsonl
from harness.metrics.cell_summary import CellSummary
from harness.parity import CellParity, find_cell_parity
from harness.plan import Cell, Plan
from harness.predict import NoPrediction, Prediction, read_predictions
from harness.result_records import CellResult
from harness.store import Store
from harness.telemetry import TelemetrySummary, read_telemetry
from harness.verdict import GateVerdict, Lock, read_gate, read_lock


@dataclass(frozen=True, slots=True)
class RunFiles:
    """What the run stored once for all its cells."""

    matrix: str
    run_id: str | None
    """The run's id (``run.json``); None for a run stored before stamps."""
    lock: Lock | None
    """The run's lock (``lock.json``: engine versions, the servers' command lines, the machine); None before
    ``harness gate`` wrote it."""
    gate: GateVerdict | None
    predictions: dict[str, Prediction]
    declined: dict[str, str]
    """Cells the run could not predict, by id, with the reason."""


@dataclass(frozen=True, slots=True)
class StoredCell:
    """One measured cell, or one launch of it, with everything the run stored about it."""

    cell: Cell
    result: CellResult
    summary: CellSummary
    launch: int | None
    """None: the cell's result (pooled over its launches when it has several); k: launch k's own."""
    run: RunFiles
    records: tuple[RequestRecord, ...] = ()
    """The measured requests behind ``summary`` (warm-up excluded); empty when no records file is stored."""
    telemetry: TelemetrySummary | None = None
    parity: CellParity | None = None

    @property
    def name(self) -> str:
        """The report's name: the cell id, and the launch when it is one launch's."""
        return self.cell.cell_id if self.launch is None else f"{self.cell.cell_id}_launch{self.launch}"


@dataclass(frozen=True, slots=True)
class Skipped:
    cell: Cell
    reason: str


def run_files(plan: Plan, store: Store) -> RunFiles:
    stamp = store.read_run_stamp()
    stored = read_predictions(store.predictions_path)
    outcomes = stored.outcomes if stored is not None else {}
    predictions = {cell_id: o for cell_id, o in outcomes.items() if isinstance(o, Prediction)}
    declined = {cell_id: o.reason for cell_id, o in outcomes.items() if isinstance(o, NoPrediction)}
    return RunFiles(matrix=plan.matrix.name, run_id=stamp.run_id if stamp else None,
                    lock=read_lock(store.run_lock_path), gate=read_gate(store), predictions=predictions,
                    declined=declined)


def plan_cells(plan: Plan, store: Store) -> tuple[Cell, ...]:
    """Every cell of the plan, then every SLO search's probes the run stored, each once, in that order."""
    cells = {cell.cell_id: cell for cell in plan.cells}
    for search in plan.searches:
        record = store.read_search(search.search_id)
        for probe in record.probes if record is not None else ():
            cell = search.probe(probe.value)
            cells.setdefault(cell.cell_id, cell)
    return tuple(cells.values())


def _measured(records: list[RequestRecord]) -> tuple[RequestRecord, ...]:
    return tuple(r for r in records if not r.warmup)


def _records(store: Store, cell: Cell, launch: int | None) -> tuple[RequestRecord, ...]:
    paths = [store.records_path(cell, launch)] if launch is not None else store.records_paths(cell)
    return _measured([record for path in paths if path.is_file() for record in read_jsonl(path)])


def stored_cells(plan: Plan, store: Store) -> tuple[tuple[StoredCell, ...], tuple[Skipped, ...]]:
    """Every measured cell of the stored run (and each launch of one measured on several), and the cells skipped
    with the reason."""
    run = run_files(plan, store)
    found: list[StoredCell] = []
    skipped: list[Skipped] = []
    for cell in plan_cells(plan, store):
        result = store.read_result(cell)
        if result is None or result.status != "ok" or result.summary is None:
            reason = "not run" if result is None else f"failed: {result.reason or 'no summary'}"
            skipped.append(Skipped(cell, reason))
            continue
        found.append(StoredCell(cell, result, result.summary, None, run, _records(store, cell, None),
                                read_telemetry(store.telemetry_path(cell)),
                                find_cell_parity(store.parity_verdict_path(cell))))
        launches = result.summary.launches
        for launch in range(launches) if launches > 1 else ():
            own = store.read_result(cell, launch)
            if own is None or own.status != "ok" or own.summary is None:
                skipped.append(Skipped(cell, f"launch {launch}: no figures stored"))
                continue
            found.append(StoredCell(cell, own, own.summary, launch, run, _records(store, cell, launch)))
    return tuple(found), tuple(skipped)
