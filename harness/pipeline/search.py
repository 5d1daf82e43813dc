"""SLO search: the highest concurrency (or request rate) at which a server configuration still meets the SLO.

Bracketing, then bisection, on measured cells (as vLLM's ``bench sweep serve_sla`` and AIPerf's adaptive search
do): probe ``min``; while probes meet the SLO, double the load, until a probe misses it (the bracket closes), stops
raising output throughput by ``saturation`` (more load buys nothing: saturated) or reaches ``max``; then bisect
between the highest load that met the SLO and the lowest that missed, to a step of one user (or, for request rates,
``resolution``). ``max_probes`` bounds the whole search. The answer is the highest load that met it.

Each probe is a cell measured on the group's running server, stored like any cell; a probe whose cell is already
stored (a grid point, or an interrupted run's probe) is reused, not measured again, so a resumed search replays the
same decisions from disk. The search record (``searches/<id>.json``) is written after every probe. With several
launches per configuration the first launch decides which loads to probe; later launches measure the same probe
cells (``with_probes``), and the report judges each probe on its pooled result.

A verdict near the SLO's bound is as noisy as the cell: the report shows each probe's margin to the bound, and the
answer's resolution is one probe step.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from harness.analysis import slo_misses, slo_unsupported
from harness.config import Slo
from harness.plan import Cell, Plan, SloSearch
from harness.result_records import CellResult, SearchProbe, SearchRecord
from harness.store import Store

log = logging.getLogger(__name__)

Measure = Callable[[Cell], Awaitable[CellResult | None]]
"""Measures a cell on the running server (None: the server is gone and the search must wait for a relaunch)."""


def next_load(search: SloSearch, probes: Sequence[SearchProbe]) -> tuple[float | None, str | None]:
    """The next load to probe, or (None, why the search is over); pure, so a resumed search decides the same."""
    spec = search.spec
    if not probes:
        return spec.min, None
    if len(probes) >= spec.max_probes:
        return None, "probe-limit"
    failing = [p.value for p in probes if not p.meets]
    high = min(failing) if failing else None
    passing = sorted((p for p in probes if p.meets and (high is None or p.value < high)), key=lambda p: p.value)
    if not passing:
        return None, "min-misses"
    low = passing[-1].value
    if high is None:
        if len(passing) >= 2 and _saturated(passing[-2], passing[-1], spec.saturation):
            return None, "saturated"
        if low >= spec.max:
            return None, "max"
        following = min(low * 2, spec.max)
    else:
        if (high - low <= 1) if search.integral else (high <= low * (1 + spec.resolution)):
            return None, "bracketed"
        following = (low + high) / 2
    following = float(int(following)) if search.integral else following
    if any(p.value == following for p in probes):
        return None, "bracketed"
    return following, None


def _saturated(before: SearchProbe, after: SearchProbe, saturation: float) -> bool:
    if before.output_throughput is None or after.output_throughput is None:
        return False
    return after.output_throughput < before.output_throughput * (1 + saturation)


def judge(value: float, cell: Cell, result: CellResult, slo: Slo, reused: bool) -> SearchProbe:
    """A probe's SLO verdict: a failed cell misses (its reason is the miss)."""
    if result.status != "ok" or result.summary is None:
        return SearchProbe(value=value, cell_id=cell.cell_id, meets=False, misses=(result.reason or "failed",),
                           reused=reused)
    summary = result.summary
    misses = slo_misses(summary, slo)
    if summary.failed:
        misses.append(f"{summary.failed} of {summary.requests} requests failed")
    return SearchProbe(value=value, cell_id=cell.cell_id, meets=not misses, misses=tuple(misses),
                       unsupported=tuple(slo_unsupported(summary)), output_throughput=summary.output_throughput,
                       reused=reused)


async def run_search(search: SloSearch, store: Store, slo: Slo, measure: Measure, launch: int | None) -> bool:
    """Probe until the search ends; False when the server went away first (the next launch resumes it)."""
    record = SearchRecord(search_id=search.search_id, label=search.label, axis=search.axis)
    while True:
        value, stopped = next_load(search, record.probes)
        if value is None:
            probes = record.probes
            met = [p.value for p in probes if p.meets and not any(not q.meets and q.value <= p.value for q in probes)]
            record = record.model_copy(update={"answer": max(met) if met else None, "stopped": stopped})
            store.write_search(record)
            log.info("search %s: %s after %d probes; answer %s", search.label, stopped, len(probes),
                     "none" if record.answer is None else f"{record.answer:g}")
            return True
        cell = search.probe(value)
        stored = store.read_result(cell, launch)
        result = stored if stored is not None and stored.status == "ok" else await measure(cell)
        if result is None:
            store.write_search(record)
            return False
        probe = judge(value, cell, result, slo, reused=result is stored)
        log.info("search %s: %s %g %s", search.label, search.axis, value,
                 "meets the SLO" if probe.meets else "misses: " + "; ".join(probe.misses))
        record = record.model_copy(update={"probes": (*record.probes, probe)})
        store.write_search(record)


def probe_cells(search: SloSearch, store: Store) -> tuple[Cell, ...]:
    """The cells a search has probed so far (from its stored record)."""
    record = store.read_search(search.search_id)
    return tuple(search.probe(p.value) for p in record.probes) if record is not None else ()


def with_probes(plan: Plan, store: Store) -> Plan:
    """The plan with every search's probe cells added to its server's group (after the grid's, without doubles),
    so that later launches, pooling, the gate and the report treat them as the cells they are."""
    groups = []
    for group in plan.groups:
        cells = list(group.cells)
        seen = {c.cell_id for c in cells}
        for search in group.searches:
            for cell in probe_cells(search, store):
                if cell.cell_id not in seen:
                    seen.add(cell.cell_id)
                    cells.append(cell)
        groups.append(replace(group, cells=tuple(cells)))
    return replace(plan, groups=tuple(groups))


def searches_to_run(searches: Sequence[SloSearch], store: Store, force: bool) -> list[SloSearch]:
    """The searches not finished yet; when forced, every search, forgotten first with its probes' results."""
    if force:
        for search in searches:
            store.clear_search(search.search_id, probe_cells(search, store))
    return [s for s in searches if (r := store.read_search(s.search_id)) is None or r.stopped is None]
