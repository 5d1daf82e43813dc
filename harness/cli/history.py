"""``harness history``: the results history of a matrix on this machine, the series of each gated figure over runs
with the launch spread of each run, the change points Apache Otava finds in it, and the machine-speed probe beside
it, so a machine that slowed down is not read as a regression."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.app import HistoryOption, LockDirOption, MatrixArg, OutOption, app, fail
from harness.errors import HarnessError, HistoryError

if TYPE_CHECKING:
    from harness.history import Holding, RunInfo, Series, Trend

SHOWN_RUNS = 12
"""Runs of each series printed (the newest)."""


def _nothing_here(url: str, matrix: str, machine: str, held: list[Holding], here: bool) -> HistoryError:
    from harness.history import shown

    there = "; ".join(f"{h.matrix} on {h.machine} ({h.runs} run(s))" for h in held) or "no run at all"
    where = f"this machine ({machine})" if here else machine
    return HistoryError(f"the history database {shown(url)} holds no run of matrix {matrix!r} on {where}; it "
                        f"holds: {there}\n  fix: run the matrix here (`harness run MATRIX`, or `make "
                        "bench`) to start its history, pass --machine to read another machine's, or point --history "
                        "at the database this matrix was recorded in")


def _runs_table(runs: list[RunInfo]) -> list[str]:
    lines = ["| run | started | commit | engines | machine probe (s) |", "|--:|---|---|---|--:|"]
    for i, run in enumerate(runs, 1):
        probe = f"{run.machine_s:.3f}" if run.machine_s is not None else "–"
        lines.append(f"| {i} | {run.started_at} | {(run.commit or 'unknown')[:10]} | "
                     f"{', '.join(run.engines.values()) or '–'} | {probe} |")
    return lines


def _num(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.0f}"


def _series_row(series: Series, trend: Trend) -> str:
    from harness.metrics import gated_metric

    gated = gated_metric(series.metric)
    newest = series.points[-1]
    spread = f" [{_num(newest.low)}-{_num(newest.high)}]" if len(newest.values) > 1 else ""
    values = " ".join(_num(v) for v in series.values[-SHOWN_RUNS:])
    changes = "; ".join(f"run {c.index + 1}: {c.change_pct:+.1f}% (p={c.pvalue:.2g})" for c in trend.changes) or "none"
    return (f"| {series.label} | {series.metric} ({gated.metric.unit}, {gated.metric.direction} is better) | "
            f"{len(series.points)} | {_num(newest.center)}{spread} | {values} | {changes} | {trend.verdict} |")


@app.command()
def history(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
            url: HistoryOption = None,
            metric: Annotated[list[str] | None, typer.Option(
                "--metric", help="a gateable figure to show (repeatable; default: the matrix's gates.metrics)")] = None,
            cell: Annotated[str | None, typer.Option("--cell", help="only cells whose label contains this")] = None,
            machine: Annotated[str | None, typer.Option(
                "--machine", help="read another machine's history (its fingerprint, as `harness history` lists "
                                  "it); default: this machine")] = None,
            record: Annotated[bool, typer.Option("--record", help="first record the run stored under --out (one "
                                                 "the database could not take when it ran)")] = False) -> None:
    """The series of each gated figure over this matrix's runs on this machine, with the change points Apache
    Otava finds (p < gates.history.max_pvalue) and the history's verdict on the newest run."""
    from harness.history import (
        DISABLED,
        change_points,
        holdings,
        judge_trends,
        opened,
        read_series,
        runs_of,
        shown,
    )
    from harness.host import hardware_info
    from harness.metrics import gated_metric
    from harness.pipeline import load_plan, with_probes
    from harness.store import Store
    from harness.verdict import record_stored

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir, url)
        if store.history_url == DISABLED:
            raise HistoryError(f"--history {DISABLED} turns the history off\n  fix: give the database URL (or none "
                               "for the SQLite file under --out)")
        if record:
            record_stored(with_probes(the_plan, store), store)
        metrics = list(metric or the_plan.matrix.gates.metrics)
        for name in metric or ():
            try:
                gated_metric(name)
            except ValueError as exc:
                raise HistoryError(f"--metric {name}: {exc}\n  fix: name a gateable figure") from None
        where = machine or hardware_info().fingerprint
        with opened(store.history_url) as engine:
            runs = runs_of(engine, the_plan.matrix.name, where)
            if not runs:
                raise _nothing_here(store.history_url, the_plan.matrix.name, where, holdings(engine), machine is None)
            series = read_series(engine, the_plan.matrix.name, where, metrics)
    except HarnessError as exc:
        raise fail(exc) from exc
    spec = the_plan.matrix.gates
    typer.echo(f"history: {shown(store.history_url)}\nmatrix {the_plan.matrix.name} on {where}: {len(runs)} run(s)\n")
    typer.echo("\n".join(_runs_table(runs)))
    probes = [r.machine_s for r in runs if r.machine_s is not None]
    machine_changes = change_points(probes, max_pvalue=spec.history.max_pvalue) if len(probes) == len(runs) else []
    typer.echo("\nmachine-speed probe: " + ("; ".join(f"a step of {c.change_pct:+.1f}% in seconds at run "
                                                      f"{c.index + 1} (p={c.pvalue:.2g})" for c in machine_changes)
                                           or "no change point"))
    shown_series = [s for s in series if cell is None or cell in s.label]
    typer.echo(f"\n{len(shown_series)} series (change points located by Apache Otava and re-tested by Student's t at "
               f"p < {spec.history.max_pvalue:g}, on the log of each run's geometric mean over its launches; the "
               f"verdict is the history's on the newest run at ±{spec.tolerance:.0%}, the figures read counted "
               "together as the gate counts its gated figures):\n")
    typer.echo("| cell | metric | runs | newest [launches] | series, oldest to newest | change points | newest run |")
    typer.echo("|---|---|--:|--:|---|---|---|")
    directions = {name: gated_metric(name).metric.direction for name in metrics}
    trends = judge_trends(series, directions, spec.tolerance, spec.history, runs[-1].run_key)
    for s, trend in zip(series, trends, strict=True):
        if s in shown_series:
            typer.echo(_series_row(s, trend))
