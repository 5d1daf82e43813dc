"""The history stage's entries: record a run, and judge a run's figures by their series. Each opens the database
at the URL it is given, does its work and closes it, so nothing holds a connection between stages."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine

from harness.calibration import Calibration
from harness.config.gates import HistorySpec
from harness.history.database import DISABLED, open_history
from harness.history.recording import Recorded, RunIdentity, record_run
from harness.history.series import read_series, runs_of
from harness.history.trend import Trend, judge_trends
from harness.result_records import CellResult
from harness.servers.expert_load_collectors import ExpertCounts


def check_history(url: str) -> None:
    """The validation pass's check: the history at ``url`` opens (reachable, a database of this harness, migrated
    to its schema), or a HistoryError names the URL and the fix, before anything launches; ``none`` passes."""
    if url != DISABLED:
        with opened(url):
            pass


@contextmanager
def opened(url: str) -> Iterator[Engine]:
    engine = open_history(url)
    try:
        yield engine
    finally:
        engine.dispose()


def record(url: str, identity: RunIdentity, results: Sequence[CellResult], calibration: Calibration,
           experts: Mapping[str, Sequence[ExpertCounts | None]] | None = None) -> Recorded:
    """Record the run's finished cells and probes at ``url`` (and each launch's expert load, by cell id);
    HistoryError when the database cannot take them."""
    with opened(url) as engine:
        return record_run(engine, identity, results, calibration, experts)


@dataclass(frozen=True, slots=True)
class HistoryJudgement:
    """The history's verdict on every gated figure of a run: the matrix's runs on this machine, and a trend per
    (cell, metric) that has a series."""

    runs: int
    trends: tuple[Trend, ...]

    def trend(self, cell_id: str, metric: str) -> Trend | None:
        return next((t for t in self.trends if (t.series.cell_id, t.series.metric) == (cell_id, metric)), None)


@dataclass(frozen=True, slots=True)
class HistoryQuestion:
    """Which run to judge, and by what: the run ``run_key`` of ``matrix`` on ``machine``, each metric of
    ``directions`` (name -> higher / lower) of each of ``cell_ids``, at the gate's ``tolerance`` and ``spec``."""

    matrix: str
    machine: str
    run_key: str | None
    cell_ids: tuple[str, ...]
    directions: Mapping[str, str]
    tolerance: float
    spec: HistorySpec


def judge_history(url: str, question: HistoryQuestion) -> HistoryJudgement:
    """Judge the question's run by each figure's series of runs in the database at ``url``."""
    q = question
    with opened(url) as engine:
        runs = runs_of(engine, q.matrix, q.machine)
        series = read_series(engine, q.matrix, q.machine, list(q.directions), list(q.cell_ids))
    return HistoryJudgement(len(runs), judge_trends(series, q.directions, q.tolerance, q.spec, q.run_key))
