"""Command line: each command parses its arguments and makes one library call. The matrix YAML is the interface.

Exit codes: 0 success, 1 the run finished but some cells failed, 2 a harness or input error (nothing launched
for a bad matrix), 130 interrupted (finished cells are kept; rerun to resume).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from harness.config import load_matrix
from harness.errors import HarnessError
from harness.plan import Plan, expand
from harness.servers import get_runtime

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help="Benchmark MoE serving recipes on vLLM/SGLang.")
log = logging.getLogger("harness")
T = TypeVar("T")

MatrixArg = Annotated[Path, typer.Argument(help="matrix YAML, e.g. matrices/default.yaml")]
OutOption = Annotated[Path, typer.Option("--out", help="reports root", envvar="HARNESS_REPORTS_DIR")]


def _setup_logging() -> None:
    logging.basicConfig(level=os.environ.get("HARNESS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress


def _fail(exc: HarnessError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def _load_plan(matrix: Path) -> Plan:
    """Load, expand and let every runtime adapter vet its cells: bad input never half-runs."""
    plan = expand(load_matrix(matrix), source=str(matrix))
    for group in plan.groups:
        get_runtime(group.server.runtime).check(group.server, str(matrix))
    return plan


def _run_async(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, with SIGTERM handled like Ctrl-C: the main task is cancelled and unwinds (servers reaped)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await coro

    return asyncio.run(main())


@app.command()
def plan(matrix: MatrixArg) -> None:
    """Print every cell, which cells share a server, and how many launches the run needs. Launches nothing."""
    try:
        the_plan = _load_plan(matrix)
    except HarnessError as exc:
        raise _fail(exc) from exc
    from harness.plan_view import render_plan

    typer.echo(render_plan(the_plan))


@app.command()
def run(matrix: MatrixArg, out: OutOption = Path("reports"),
        force: Annotated[bool, typer.Option("--force", help="rerun completed cells too")] = False) -> None:
    """Run every incomplete cell of the matrix, then render its report and print the report's path."""
    _setup_logging()
    from harness.pipeline import run_plan
    from harness.report import render_report
    from harness.store import Store

    try:
        the_plan = _load_plan(matrix)
    except HarnessError as exc:
        raise _fail(exc) from exc
    store = Store(out, the_plan.matrix.name)
    try:
        results = _run_async(run_plan(the_plan, store, force=force))
        report = render_report(the_plan, store)
    except HarnessError as exc:
        raise _fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo(f"interrupted: finished cells are kept under {store.dir}; rerun to resume", err=True)
        raise typer.Exit(130) from None
    failed = [r for r in results if r.status != "ok"]
    ran = len(results)
    typer.echo(f"{ran} cells run, {len(failed)} failed, {len(the_plan.cells) - ran} already complete")
    typer.echo(f"report: {report}")
    if failed:
        raise typer.Exit(1)


@app.command()
def report(matrix: MatrixArg, out: OutOption = Path("reports")) -> None:
    """Render the report from results already on disk (runs nothing)."""
    from harness.report import render_report
    from harness.store import Store

    try:
        the_plan = _load_plan(matrix)
        typer.echo(f"report: {render_report(the_plan, Store(out, the_plan.matrix.name))}")
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def fixtures() -> None:
    """Build the project's tiny MoE checkpoints (cached by content: a second call does nothing)."""
    _setup_logging()
    from harness.fixtures import build_fixtures

    try:
        for name, path in build_fixtures().items():
            typer.echo(f"{name}: {path}")
    except HarnessError as exc:
        raise _fail(exc) from exc
