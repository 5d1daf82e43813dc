"""An engine added from outside the package (``tests/support/toy_engine.py``, one file) runs a cell through the
whole pipeline on the fake server: the registry is the only place that learns its name."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.pipeline import load_plan, run_plan, validate
from harness.servers.runtime_lookup import check_engines, get_runtime, model_families, runtime_names
from harness.store import Store

from tests.support.processes import live_pids
from tests.support.toy_engine import TOY_FAMILY, ToyRuntime

pytestmark = pytest.mark.fake_engine

TOY_MATRIX = """
name: toy
models:
  m: {{id: "{model}", family: {family}}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [toy]
  concurrency: [2]
server: {{startup_timeout_s: 60}}
runtimes: {{toy: {{extra_args: ["--ttft-ms", "2", "--itl-ms", "1"]}}}}
"""


def test_a_toy_engine_from_outside_runs_a_cell(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path,
                                               tmp_path: Path) -> None:
    assert "toy" in runtime_names() and TOY_FAMILY in model_families()
    assert isinstance(get_runtime("toy"), ToyRuntime)
    path = write_matrix(TOY_MATRIX.format(model=tiny_tokenizer_dir, family=TOY_FAMILY))
    check_engines(load_matrix(path), str(path))
    plan = load_plan(path)
    assert [g.server.runtime for g in plan.groups] == ["toy"]
    assert get_runtime("toy").tool_parser(plan.groups[0].server.model) == "toy_json"

    store = Store(tmp_path / "reports", plan.matrix.name)
    results = asyncio.run(run_plan(plan, store, source=str(path)))
    assert [(r.status, r.reason) for r in results] == [("ok", None)]
    summaries = list((tmp_path / "reports" / "toy" / "runs").glob("*/summary.json"))
    assert len(summaries) == 1
    stored = json.loads(summaries[0].read_text())
    assert stored["label"] == "m/toy/bf16/tp1/off/w/c2" and stored["status"] == "ok"
    assert stored["summary"]["completed"] == 4
    assert not live_pids("harness_testing.fake_engine")


def test_a_toy_engine_serves_a_toy_workload(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path,
                                            tmp_path: Path) -> None:
    """Both extension points at once, each one file from outside the package: the toy engine's server runs the toy
    kind's cell through plan, validation, launch, load and store."""
    from tests.support.toy_workload import EchoWorkload

    text = TOY_MATRIX.format(model=tiny_tokenizer_dir, family=TOY_FAMILY).replace(
        "w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}",
        'w: {kind: echo, text: "hello toy engine", output_tokens: 3, num_requests: 4, warmup_requests: 1}')
    path = write_matrix(text)
    plan = validate(path, out=tmp_path / "reports")
    (cell,) = plan.cells
    assert isinstance(cell.workload, EchoWorkload) and cell.server.runtime == "toy"
    store = Store(tmp_path / "reports", plan.matrix.name)
    (result,) = asyncio.run(run_plan(plan, store, source=str(path)))
    assert result.status == "ok" and result.summary is not None and result.summary.completed == 4, result.reason
    assert not live_pids("harness_testing.fake_engine")
