"""The command line's application object and what every command shares: argument types, logging, the error
exit, and an event loop that turns SIGTERM into a cancellation (so servers are reaped)."""

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

from harness.cli import paths
from harness.errors import HarnessError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Benchmark MoE serving recipes on vLLM/SGLang.")
T = TypeVar("T")

# every path a command takes is checked as it is parsed (harness.cli.paths): a wrong one is exit 2, naming it
MatrixArg = Annotated[Path, typer.Argument(help="matrix YAML, e.g. matrices/default.yaml", callback=paths.matrix_file)]
OutOption = Annotated[Path, typer.Option("--out", help="reports root", envvar="HARNESS_REPORTS_DIR",
                                         callback=paths.out_dir)]
LockDirOption = Annotated[Path, typer.Option("--lock-dir", help="committed locks and baselines",
                                             envvar="HARNESS_LOCK_DIR", callback=paths.lock_dir)]
HistoryOption = Annotated[str | None, typer.Option(
    "--history", envvar="HARNESS_HISTORY", callback=paths.history_url,
    help="results history database URL: postgresql+psycopg://user@host/db for a "
    "team's shared history, sqlite:///path; default sqlite under --out (history.sqlite); `none` turns it off")]
LaunchesOption = Annotated[int | None, typer.Option(
    "--launches", min=1, max=20, help="server launches per configuration, in interleaved rounds (default: the "
                                      "matrix's `launches`); a baseline needs 3 or more")]


def setup_logging() -> None:
    logging.basicConfig(level=os.environ.get("HARNESS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress
    logging.getLogger("alembic").setLevel(logging.WARNING)  # four lines each time the history is opened


def fail(exc: HarnessError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, with SIGTERM handled like Ctrl-C: the main task is cancelled and unwinds (servers reaped)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await coro

    return asyncio.run(main())
