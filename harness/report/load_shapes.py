"""The report's view of the load shapes beyond single requests: agent sessions turn by turn, trace replays, and
SLO searches with every probe and the answer.

A workload's kind names the view its cells get (``WorkloadKind.report_shape``, one of ``SHAPE_VIEWS``; none: the
tables only). ``sessions`` (agents): per turn, the context the server prefilled, TTFT and TPOT, and the share of the
prompt served from the prefix cache (``harness.metrics.turns``), from the cell's records over every launch.
``replay`` (traces): how late the replayer sent each request against the workload's own schedule, beside the cell's
prefix-cache hit rate and TTFT. The views live here, not with the kinds, because they read report rows and metrics
that sit above the load layer.

Searches: each probe judged on its stored (pooled) result against the SLO, with the binding bound's margin, and the
answer priced: "$/MTok at the SLO". A search whose record is absent has not run; one without ``stopped`` was
interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from harness.analysis.recommend import slo_misses, slo_unsupported
from harness.config.matrix import Slo
from harness.errors import HarnessError
from harness.load.prompts import kind_of
from harness.load.records import RequestRecord, read_jsonl
from harness.metrics.turns import TurnStats, turn_stats
from harness.plan.cells import Cell, Plan, SloSearch
from harness.report.rows import CellRow
from harness.result_records import SearchRecord
from harness.store import Store

STOPPED = {
    "bracketed": "bracketed: the next load up missed the SLO",
    "saturated": "saturated: doubling the load no longer raised output throughput",
    "max": "reached the search's max while still meeting the SLO",
    "min-misses": "even the first probe missed the SLO",
    "probe-limit": "stopped at max_probes before the bracket closed",
}


@dataclass(frozen=True, slots=True)
class AgentCell:
    row: CellRow
    turns: tuple[TurnStats, ...]
    sessions: int


@dataclass(frozen=True, slots=True)
class TraceCell:
    row: CellRow
    requests: int
    late_p50_ms: float | None
    late_p99_ms: float | None
    """How long after its due time the replayer sent a request."""


@dataclass(frozen=True, slots=True)
class ProbeRow:
    value: float
    row: CellRow
    meets: bool
    misses: tuple[str, ...]
    reused: bool
    headroom: str
    """Each set bound's measured value over the bound (``TPOT p99 0.82x``): below 1 meets it."""
    unsupported: tuple[str, ...] = ()
    """Bounds whose claim its requests are too few to support (``slo_unsupported``)."""


@dataclass(frozen=True, slots=True)
class SearchView:
    search: SloSearch
    record: SearchRecord | None
    probes: tuple[ProbeRow, ...]
    answer: ProbeRow | None
    stopped: str


@dataclass(frozen=True, slots=True)
class LoadShapes:
    agents: tuple[AgentCell, ...]
    traces: tuple[TraceCell, ...]
    searches: tuple[SearchView, ...]

    @property
    def empty(self) -> bool:
        return not (self.agents or self.traces or self.searches)


@dataclass(slots=True)
class _Found:
    """The shaped cells found so far, in plan order."""

    agents: list[AgentCell] = field(default_factory=list)
    traces: list[TraceCell] = field(default_factory=list)


def _records(store: Store, cell: Cell, launches: int) -> list[RequestRecord]:
    found: list[RequestRecord] = []
    for launch in (None, *range(launches)) if launches > 1 else (None,):
        path = store.records_path(cell, launch)
        if path.is_file():
            found += read_jsonl(path)
    return found


def _headroom(row: CellRow, slo: Slo) -> str:
    bounds = (("TTFT p99", row.ttft.p99 if row.ttft else None, slo.ttft_p99_ms or slo.ttft_ms),
              ("TPOT p50", row.tpot.median if row.tpot else None, slo.tpot_p50_ms),
              ("TPOT p99", row.tpot.p99 if row.tpot else None, slo.tpot_ms))
    return ", ".join(f"{name} {value / bound:.2f}x" for name, value, bound in bounds
                     if bound is not None and value is not None)


def _search_view(search: SloSearch, store: Store, rows: Mapping[str, CellRow], slo: Slo) -> SearchView:
    record = store.read_search(search.search_id)
    probes = []
    for probe in record.probes if record is not None else ():
        row = rows.get(probe.cell_id)
        if row is None:
            continue
        result = row.result
        summary = result.summary if result is not None else None
        misses = tuple(slo_misses(summary, slo)) if summary is not None else (probe.misses or ("not measured",))
        unsupported = tuple(slo_unsupported(summary)) if summary is not None else ()
        probes.append(ProbeRow(value=probe.value, row=row, meets=summary is not None and not misses, misses=misses,
                               reused=probe.reused, headroom=_headroom(row, slo), unsupported=unsupported))
    answer = next((p for p in probes if record is not None and p.value == record.answer), None)
    stopped = "not run yet" if record is None else STOPPED.get(record.stopped or "", "interrupted: rerun to resume")
    return SearchView(search=search, record=record, probes=tuple(sorted(probes, key=lambda p: p.value)),
                      answer=answer, stopped=stopped)


def _sessions(found: _Found, row: CellRow, records: list[RequestRecord]) -> None:
    sessions = len({(r.repeat, r.session) for r in records if not r.warmup and r.session is not None})
    found.agents.append(AgentCell(row=row, turns=tuple(turn_stats(records)), sessions=sessions))


def _replay(found: _Found, row: CellRow, records: list[RequestRecord]) -> None:
    timed = [r for r in records if r.due_time is not None]
    late = np.asarray([(r.send_time - r.due_time) * 1000.0 for r in timed if r.due_time is not None])
    found.traces.append(TraceCell(row=row, requests=len(timed),
                                  late_p50_ms=float(np.percentile(late, 50)) if late.size else None,
                                  late_p99_ms=float(np.percentile(late, 99)) if late.size else None))


SHAPE_VIEWS: Mapping[str, Callable[[_Found, CellRow, list[RequestRecord]], None]] = {
    "sessions": _sessions, "replay": _replay}
"""The views a workload kind's ``report_shape`` can name: turn by turn, or lateness against its own timing."""


def load_shapes(plan: Plan, store: Store, rows: Mapping[str, CellRow]) -> LoadShapes:
    """The agent, trace and search views of a run, from disk."""
    launches = plan.rounds()
    found = _Found()
    for cell in plan.cells:
        row = rows.get(cell.cell_id)
        if row is None or row.result is None or row.result.summary is None:
            continue
        kind = kind_of(cell.workload)
        if kind.report_shape is None:
            continue
        view = SHAPE_VIEWS.get(kind.report_shape)
        if view is None:
            raise HarnessError(f"workload kind {kind.name!r} asks for the report view {kind.report_shape!r}; the "
                               f"report has: {', '.join(SHAPE_VIEWS)}")
        view(found, row, _records(store, cell, launches))
    searches = tuple(_search_view(s, store, rows, plan.matrix.slo) for s in plan.searches)
    return LoadShapes(agents=tuple(found.agents), traces=tuple(found.traces), searches=searches)
