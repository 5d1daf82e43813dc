"""``harness export``'s one entry: a stored run's measured cells written in a shared format.

``br`` writes one Benchmark Report (llm-d's, version 0.2.1) per measured cell and per launch of a cell measured on
several (``br_export``); ``csv`` and ``parquet`` write one table of them (``table_export``). Files go under the
store's ``export/`` unless a destination is given. Nothing is measured or judged here: a run with no measured cell
is an error that says so, and every cell without figures is listed with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.config.matrix import Matrix
from harness.errors import HarnessError
from harness.export.br_export import write_reports
from harness.export.stored_cell import Skipped, StoredCell, stored_cells
from harness.export.table_export import write_csv, write_parquet
from harness.plan import Plan
from harness.store import Store

WRITERS: dict[str, Callable[[Sequence[StoredCell], Matrix, Path], list[Path]]] = {
    "br": lambda cells, matrix, dest: write_reports(cells, dest),
    "csv": write_csv,
    "parquet": write_parquet,
}
"""Each format's writer: the stored cells in, the files written out."""
EXPORT_FORMATS = tuple(WRITERS)


@dataclass(frozen=True, slots=True)
class Exported:
    """What one export wrote, and what it could not."""

    paths: tuple[Path, ...]
    cells: int
    """Measured cells exported (each once, pooled over its launches)."""
    launches: int
    """Single launches exported beside their cells."""
    skipped: tuple[Skipped, ...]


def export_run(plan: Plan, store: Store, fmt: str = "br", dest: Path | None = None) -> Exported:
    """Write the stored run of ``plan`` as ``fmt`` under ``dest`` (default: the store's ``export/``)."""
    if fmt not in WRITERS:
        raise HarnessError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    cells, skipped = stored_cells(plan, store)
    if not cells:
        raise HarnessError(f"{store.dir}: no measured cell to export ({len(skipped)} without figures)\n"
                           f"  fix: run the matrix first (`harness run`), with the same --out")
    paths = WRITERS[fmt](cells, plan.matrix, dest if dest is not None else store.export_dir)
    launches = sum(1 for c in cells if c.launch is not None)
    return Exported(paths=tuple(paths), cells=len(cells) - launches, launches=launches, skipped=skipped)
