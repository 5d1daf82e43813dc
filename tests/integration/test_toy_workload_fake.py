"""A workload kind added from outside the package (``tests/support/toy_workload.py``, one file) runs a cell through
the whole pipeline in-process, on the fake server: the matrix accepts its kind, the plan prints its line, the
runner sends its prompts, and the store holds the cell's result, with no change to the harness."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.load.records import read_jsonl
from harness.pipeline import load_plan, prompt_offset, run_plan
from harness.report import render_plan
from harness.store import Store

from tests.support.toy_workload import EchoWorkload

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: toy
models:
  m: {{id: "{model}"}}
workloads:
  echo: {{kind: echo, text: "hello fake server", output_tokens: 3, num_requests: 6, warmup_requests: 1{extra}}}
axes:
  runtime: [fake]
  concurrency: [2]
server: {{startup_timeout_s: 60}}
"""


def test_a_toy_kind_runs_a_cell_on_the_fake_server(write_matrix: Callable[[str], Path], tiny_tokenizer_dir: Path,
                                                   tmp_path: Path) -> None:
    plan = load_plan(write_matrix(MATRIX.format(model=tiny_tokenizer_dir, extra="")))
    (cell,) = plan.cells
    assert isinstance(cell.workload, EchoWorkload) and cell.workload.text == "hello fake server"
    assert "echo c=2  (6 requests + 1 warm-up)" in render_plan(plan)

    store = Store(tmp_path / "reports", plan.matrix.name, tmp_path / "lock")
    (result,) = asyncio.run(run_plan(plan, store))
    assert result.status == "ok", result.reason
    stored = store.read_result(cell)
    assert stored is not None and stored.summary is not None
    assert (stored.summary.requests, stored.summary.completed, stored.summary.warmup_excluded) == (6, 6, 1)
    records = read_jsonl(store.records_path(cell))
    offset = prompt_offset(cell)
    assert [r.index for r in records if not r.warmup] == list(range(offset, offset + 6))
    assert all(r.max_tokens == 3 and r.input_tokens == 5 for r in records)  # "hello fake server (request i)"


def test_a_toy_kind_is_checked_as_strictly_as_a_built_in_one(write_matrix: Callable[[str], Path],
                                                             tiny_tokenizer_dir: Path) -> None:
    with pytest.raises(ConfigError) as typo:
        load_plan(write_matrix(MATRIX.format(model=tiny_tokenizer_dir, extra=", txt: hi")))
    assert typo.value.key == "workloads.echo.txt" and "unknown key 'txt'" in typo.value.problem
    assert "text" in typo.value.fix  # its own keys are among the valid ones
    unknown = MATRIX.replace("kind: echo", "kind: echoes")
    with pytest.raises(ConfigError, match="expected tags: .*'trace', 'echo'"):
        load_plan(write_matrix(unknown.format(model=tiny_tokenizer_dir, extra="")))
