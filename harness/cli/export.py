"""``harness export``: a stored run in a shared format (llm-d's Benchmark Report, or one table for notebooks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli import paths
from harness.cli.app import LockDirOption, MatrixArg, OutOption, app, fail
from harness.errors import HarnessError, StorageError

FORMATS = ("br", "csv", "parquet")
"""``harness.export.EXPORT_FORMATS``, named here for the help so that the CLI loads without the exporters (pandas);
the exporter checks the name it is given against its own."""


@app.command("export")
def export_command(
    matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
    fmt: Annotated[str, typer.Option("--format", help=f"{' | '.join(FORMATS)}: br writes one Benchmark Report "
                                     "(llm-d's, version 0.2.1) per measured cell and per launch; csv and parquet "
                                     "one table of them")] = "br",
    dest: Annotated[Path | None, typer.Option("--dest", help="where to write (default: the run's export/ under "
                                              "--out)", callback=paths.dest_dir)] = None,
) -> None:
    """Write the results already on disk in a shared format (runs no cell, judges nothing); prints where."""
    from harness.export import export_run
    from harness.pipeline import load_plan
    from harness.store import Store

    try:
        the_plan = load_plan(matrix)
        exported = export_run(the_plan, Store(out, the_plan.matrix.name, lock_dir), fmt, dest)
    except HarnessError as exc:
        raise fail(exc) from exc
    except OSError as exc:  # something in the way under --dest (a directory named like a file it writes)
        raise fail(StorageError(f"{exc.filename or dest}: cannot be written ({exc.strerror or exc})\n  fix: "
                                "remove what is in the way, or pass another --dest")) from exc
    where = sorted({p.parent for p in exported.paths})
    launches = f" and {exported.launches} single launches" if exported.launches else ""
    typer.echo(f"exported {exported.cells} measured cells{launches} as {fmt}: {len(exported.paths)} files in "
               f"{', '.join(str(w) for w in where)}")
    for skipped in exported.skipped:
        typer.echo(f"  not exported: {skipped.cell.label}: {skipped.reason}")
