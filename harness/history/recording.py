"""Recording a run into the history: its identity (commit, engine versions, machine), every cell's figures per server
launch with the machine-speed probe around each launch (and its expert load per layer, where counted), and the run's
probes.

Recording is idempotent: the run is found by its key (the store's run id), and a cell already recorded with the
same start time is left alone, so recording a run twice, or a resumed run again, adds nothing twice. A cell measured
again within the same run (a failed cell retried on resume) replaces its earlier rows. Each cell is committed in its
own transaction, so a crash part-way keeps every cell already written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, CursorResult, Engine, delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from harness.calibration import Calibration
from harness.errors import HistoryError
from harness.history import schema
from harness.history.database import shown
from harness.host import HardwareInfo
from harness.metrics.gateable import GATEABLE, gated_metric
from harness.result_records import CellResult
from harness.servers.expert_load_collectors import ExpertCounts
from harness.store import now_iso


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """What a run is in the history: its key and the environment it measured (from the run's lock)."""

    run_key: str
    matrix: str
    matrix_sha256: str
    hardware: HardwareInfo
    harness_version: str
    harness_commit: str | None
    started_at: str
    engines: dict[str, str] = field(default_factory=dict)
    """Runtime -> the engine package's version (``vllm 0.11.0``)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """What one recording did: cells new to the history, cells it already held, cells measured again."""

    run_key: str
    added: int
    kept: int
    replaced: int


def _new_id(result: CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _run_row(connection: Connection, identity: RunIdentity) -> int:
    found = connection.execute(select(schema.runs.c.id).where(schema.runs.c.run_key == identity.run_key)).scalar()
    if found is not None:
        return int(found)
    row = connection.execute(insert(schema.runs).values(
        run_key=identity.run_key, matrix=identity.matrix, matrix_sha256=identity.matrix_sha256,
        machine=identity.hardware.fingerprint, hardware=identity.hardware.model_dump(),
        harness_version=identity.harness_version, harness_commit=identity.harness_commit,
        engines=dict(identity.engines), started_at=identity.started_at, recorded_at=now_iso()))
    return _new_id(row)


def _probes(connection: Connection, run_id: int, calibration: Calibration) -> None:
    held = set(connection.execute(select(schema.probes.c.position).where(schema.probes.c.run_id == run_id)).scalars())
    rows = [{"run_id": run_id, "position": position, "seconds": probe.seconds, "at": probe.at}
            for position, probe in sorted(calibration.probes.items()) if position not in held]
    if rows:
        connection.execute(insert(schema.probes), rows)


def _cell(connection: Connection, run_id: int, result: CellResult,
          experts: Sequence[ExpertCounts | None] = ()) -> str:
    """Write one cell's rows (``experts``: each launch's expert load, where counted); returns "added", "kept" or
    "replaced"."""
    cells = schema.cells
    found = connection.execute(select(cells.c.id, cells.c.started_at, cells.c.status).where(
        cells.c.run_id == run_id, cells.c.cell_id == result.cell_id)).first()
    if found is not None and (found.started_at, found.status) == (result.started_at, result.status):
        return "kept"
    if found is not None:
        connection.execute(delete(cells).where(cells.c.id == found.id))
    cell_row = _new_id(connection.execute(insert(cells).values(
        run_id=run_id, cell_id=result.cell_id, label=result.label, status=result.status, reason=result.reason,
        started_at=result.started_at, finished_at=result.finished_at)))
    if result.summary is not None:
        per_metric = {name: gated_metric(name).launch_values(result.summary) for name in GATEABLE}
        for launch, _ in enumerate(per_metric[GATEABLE[0]]):
            machine_s = result.machine_s[launch] if launch < len(result.machine_s) else None
            launch_row = _new_id(connection.execute(insert(schema.launches).values(
                cell_row=cell_row, launch=launch, machine_s=machine_s)))
            connection.execute(insert(schema.figures), [
                {"launch_row": launch_row, "metric": name, "value": values[launch]}
                for name, values in per_metric.items() if values[launch] is not None])
            counted = experts[launch] if launch < len(experts) else None
            if counted is not None and counted.layers:
                connection.execute(insert(schema.expert_loads), [
                    {"launch_row": launch_row, "layer": layer, "counts": list(row), "rows": rows,
                     "collector": counted.collector}
                    for layer, row, rows in zip(counted.layers, counted.counts, counted.rows, strict=True)])
    return "added" if found is None else "replaced"


def record_run(engine: Engine, identity: RunIdentity, results: Sequence[CellResult], calibration: Calibration,
               experts: Mapping[str, Sequence[ExpertCounts | None]] | None = None) -> Recorded:
    """Record the run's finished cells and probes, and each launch's expert load where ``experts`` has it (by cell
    id, one entry per launch); HistoryError (naming the database) when it cannot be written. Cells committed before
    a failure stay committed."""
    counts = {"added": 0, "kept": 0, "replaced": 0}
    try:
        with engine.begin() as connection:
            run_id = _run_row(connection, identity)
            _probes(connection, run_id, calibration)
        for result in results:
            with engine.begin() as connection:
                counts[_cell(connection, run_id, result, (experts or {}).get(result.cell_id, ()))] += 1
    except SQLAlchemyError as exc:
        text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        raise HistoryError(f"could not write the run to the history database {shown(str(engine.url))}: "
                           f"{text[0] if text else type(exc).__name__}\n  fix: the run's results are in reports/; "
                           f"once the database is reachable, `harness history MATRIX --record` records them "
                           f"({sum(counts.values())} of {len(results)} cells were recorded)") from None
    return Recorded(identity.run_key, counts["added"], counts["kept"], counts["replaced"])
