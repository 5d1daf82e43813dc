"""On-disk results of a matrix: one folder per cell, every file written atomically.

Layout under ``<root>/<matrix>/``::

    runs/<cell_id>/cell.json       the cell's full spec (what was asked)
    runs/<cell_id>/records.jsonl   one line per request, warm-up included and flagged
    runs/<cell_id>/server.log      the server's log while this cell ran
    runs/<cell_id>/summary.json    a CellResult: status ok/failed, reason, measured summary
    servers/<server_id>/server.log the whole log of every launch of that server config
    report.md                      the rendered report

A cell is complete when its summary.json says ``ok``; failed cells are retried by the next run. Atomic
writes (temp file + rename) mean a crash or Ctrl-C never leaves a half-written file that looks finished.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.metrics import CellSummary
from harness.plan import Cell


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class CellResult(BaseModel):
    """The outcome of one cell: measured figures, or the reason it has none."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    label: str
    server_id: str
    status: Literal["ok", "failed"]
    reason: str | None = None
    log_tail: str | None = None
    started_at: str
    finished_at: str
    server_ready_s: float | None = None
    summary: CellSummary | None = None


def write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Paths and reads/writes of one matrix's results."""

    def __init__(self, root: Path, matrix_name: str) -> None:
        self.dir = root / matrix_name

    def cell_dir(self, cell: Cell | str) -> Path:
        return self.dir / "runs" / (cell if isinstance(cell, str) else cell.cell_id)

    def server_log(self, server_id: str) -> Path:
        return self.dir / "servers" / server_id / "server.log"

    @property
    def report_path(self) -> Path:
        return self.dir / "report.md"

    def write_cell(self, cell: Cell) -> None:
        write_atomic(self.cell_dir(cell) / "cell.json", cell.model_dump_json(indent=2))

    def write_text(self, cell: Cell, name: str, text: str | bytes) -> None:
        write_atomic(self.cell_dir(cell) / name, text)

    def write_result(self, cell: Cell, result: CellResult) -> None:
        self.write_cell(cell)
        write_atomic(self.cell_dir(cell) / "summary.json", result.model_dump_json(indent=2))

    def read_result(self, cell: Cell | str) -> CellResult | None:
        path = self.cell_dir(cell) / "summary.json"
        try:
            return CellResult.model_validate_json(path.read_text())
        except (FileNotFoundError, ValidationError):
            return None  # absent or from an incompatible version: the cell is simply not complete

    def is_complete(self, cell: Cell) -> bool:
        result = self.read_result(cell)
        return result is not None and result.status == "ok"
