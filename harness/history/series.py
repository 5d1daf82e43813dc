"""Reading the history back: per (cell, metric) the series of runs on one machine, each run with its launches'
figures, and each run's machine-speed probe, oldest first.

A series never mixes machines: timings from another machine say nothing about this one (``harness.verdict.baseline``
keeps one baseline per machine for the same reason). What the database holds for other matrices and machines is
listed, so a command that finds nothing for this one can say what there is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from harness.errors import HistoryError
from harness.history import schema
from harness.history.database import shown


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run of the matrix on this machine, with the median of its machine-speed probes (None: none ran)."""

    run_key: str
    started_at: str
    commit: str | None
    engines: dict[str, str]
    machine_s: float | None


@dataclass(frozen=True, slots=True)
class Point:
    """One run's figure: the value of each server launch, and the probe seconds of the run."""

    run: RunInfo
    values: tuple[float, ...]

    @property
    def center(self) -> float:
        """The geometric mean of the launches: what the change points are found in."""
        if len(self.values) == 1 or min(self.values) <= 0:
            return float(median(self.values))
        return math.exp(sum(math.log(v) for v in self.values) / len(self.values))

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)


@dataclass(frozen=True, slots=True)
class Series:
    cell_id: str
    label: str
    metric: str
    points: tuple[Point, ...]

    @property
    def values(self) -> list[float]:
        return [p.center for p in self.points]


@dataclass(frozen=True, slots=True)
class Holding:
    """Runs the database holds of one matrix on one machine."""

    matrix: str
    machine: str
    runs: int


def holdings(engine: Engine) -> list[Holding]:
    r = schema.runs
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(r.c.matrix, r.c.machine, func.count()).group_by(r.c.matrix, r.c.machine)
                                      .order_by(r.c.matrix, r.c.machine)).all()
    except SQLAlchemyError as exc:
        raise _unreadable(engine, exc) from None
    return [Holding(m, machine, int(n)) for m, machine, n in rows]


def runs_of(engine: Engine, matrix: str, machine: str) -> list[RunInfo]:
    """The matrix's runs on ``machine``, oldest first."""
    r, p = schema.runs, schema.probes
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(r.c.id, r.c.run_key, r.c.started_at, r.c.harness_commit, r.c.engines)
                                      .where(r.c.matrix == matrix, r.c.machine == machine)
                                      .order_by(r.c.started_at, r.c.id)).all()
            seconds: dict[int, list[float]] = defaultdict(list)
            for run_id, s in connection.execute(select(p.c.run_id, p.c.seconds).where(
                    p.c.run_id.in_([row.id for row in rows]))):
                seconds[run_id].append(float(s))
    except SQLAlchemyError as exc:
        raise _unreadable(engine, exc) from None
    return [RunInfo(row.run_key, row.started_at, row.harness_commit, dict(row.engines or {}),
                    float(median(seconds[row.id])) if seconds[row.id] else None) for row in rows]


def read_series(engine: Engine, matrix: str, machine: str, metrics: Sequence[str],
                cell_ids: Iterable[str] | None = None) -> list[Series]:
    """Every (cell, metric) series of the matrix on ``machine``: runs where the cell was measured ok, oldest first."""
    runs = {run.run_key: run for run in runs_of(engine, matrix, machine)}
    order = {key: i for i, key in enumerate(runs)}
    r, c, la, f = schema.runs, schema.cells, schema.launches, schema.figures
    query = (select(r.c.run_key, c.c.cell_id, c.c.label, f.c.metric, la.c.launch, f.c.value)
             .join(c, c.c.run_id == r.c.id).join(la, la.c.cell_row == c.c.id).join(f, f.c.launch_row == la.c.id)
             .where(r.c.matrix == matrix, r.c.machine == machine, c.c.status == "ok", f.c.metric.in_(list(metrics))))
    if cell_ids is not None:
        query = query.where(c.c.cell_id.in_(list(cell_ids)))
    try:
        with engine.connect() as connection:
            rows = connection.execute(query).all()
    except SQLAlchemyError as exc:
        raise _unreadable(engine, exc) from None
    grouped: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    labels: dict[str, str] = {}
    for run_key, cell_id, label, metric, launch, value in rows:
        if value is not None:
            grouped[(cell_id, metric)][run_key].append((launch, float(value)))
            labels[cell_id] = label
    series = []
    for (cell_id, metric), by_run in grouped.items():
        points = tuple(Point(runs[key], tuple(v for _, v in sorted(launches)))
                       for key, launches in sorted(by_run.items(), key=lambda item: order[item[0]]))
        series.append(Series(cell_id, labels[cell_id], metric, points))
    return sorted(series, key=lambda s: (s.label, list(metrics).index(s.metric)))


def _unreadable(engine: Engine, exc: SQLAlchemyError) -> HistoryError:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return HistoryError(f"cannot read the history database {shown(str(engine.url))}: "
                        f"{text[0] if text else type(exc).__name__}\n  fix: check the database is reachable and "
                        "was written by this harness (or move it aside to start a new history)")
