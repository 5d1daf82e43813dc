"""A finished run written through the store's own writers (no server), and the damage the corruption fuzzing does
to one of its files (``tests/unit/test_stored_files.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from harness.cli import app
from harness.config import load_matrix
from harness.load import RequestRecord, write_jsonl
from harness.metrics import summarize
from harness.plan import Plan, expand
from harness.result_records import CellResult
from harness.store import Store, now_iso

from tests.support.matrices import BASE_MATRIX


def finished_records(n: int) -> list[RequestRecord]:
    return [RequestRecord(index=i, warmup=i == 0, input_tokens=16, max_tokens=8, send_time=0.1 * i,
                          end_time=0.1 * i + 0.5, chunk_times=tuple(0.05 * (k + 1) for k in range(8)),
                          chunk_tokens=(1,) * 8, output_tokens=8, prompt_tokens=16) for i in range(n)]


@dataclass(frozen=True, slots=True)
class FinishedRun:
    root: Path
    matrix: Path
    plan: Plan
    exits: dict[str, int] = field(default_factory=dict)
    """Each command's exit on the undamaged run (the gate's 2: no baseline is committed for this matrix)."""

    def store(self) -> Store:
        return Store(self.root / "reports", self.plan.matrix.name, self.root / "lock", history="none")


def write_finished_run(root: Path) -> FinishedRun:
    """Two finished cells and the run's stamp and lock, as a run leaves them (``report`` writes the lock)."""
    matrix = root / "matrix.yaml"
    matrix.write_text(BASE_MATRIX + "predict: {predictor: none}\n")
    plan = expand(load_matrix(matrix))
    run = FinishedRun(root, matrix, plan)
    store = run.store()
    store.begin_run(fresh=True)
    for cell in plan.cells:
        records = finished_records(5)
        write_jsonl(store.records_path(cell), records)
        store.write_result(cell, CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id,
                                            status="ok", started_at=now_iso(), finished_at=now_iso(),
                                            summary=summarize(records, duration_s=1.0)))
    for command in ("report", "gate", "export"):
        run.exits[command] = invoke(run, command).exit_code
    assert run.exits["report"] == 0 and run.exits["export"] == 0
    return run


def invoke(run: FinishedRun, command: str) -> Result:
    args = [command, str(run.matrix), "--out", str(run.root / "reports"), "--lock-dir", str(run.root / "lock")]
    return CliRunner().invoke(app, [*args, *([] if command == "export" else ["--history", "none"])])


def damage(kind: str, data: bytes, draw: Callable[[st.SearchStrategy[int]], int]) -> bytes | None:
    """The damaged content (None: a directory in the file's place)."""
    if kind == "truncate":
        cut = draw(st.integers(0, max(len(data) - 1, 0)))
        while cut and data[cut - 1:cut] == b"\n":  # a cut at a line's end leaves a whole, shorter file
            cut -= 1
        return data[:cut]
    if kind == "flip":
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
    if kind == "shape":
        return json.dumps(draw(st.sampled_from([[], {}, 1, "x", {"status": "ok"}, [{"index": "a"}]]))).encode()
    return b"" if kind == "empty" else None
