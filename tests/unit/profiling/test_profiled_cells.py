"""The profile stage: which cells are profiled and how their server is launched."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.plan import expand
from harness.profiling import CpuWindow, ProfileStage
from harness.profiling.profiled_cells import profiled
from harness.servers import LaunchSpec
from harness.store import Store

from tests.support.matrices import BASE_MATRIX

MATRIX = BASE_MATRIX + """\
  precision: [bf16, bf16-kvfp8]
profile: {cells: [{precision: {weights: bf16, kv_cache: auto}, concurrency: 2}]}
"""


def test_selectors_pick_cells_and_the_server_gets_the_torch_profiler_on_a_cpu(write_matrix: Callable[..., Path],
                                                                             tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    picked = profiled(plan.matrix.profile, plan.cells)
    assert [c.label for c in picked] == ["m/vllm/bf16/tp1/off/w/c2"]
    store = Store(tmp_path / "reports", plan.matrix.name)
    assert store.profiles_root == tmp_path / "profiles"
    stage = ProfileStage(plan.matrix.profile, store)
    assert stage.owed(plan.cells) == tuple(picked)
    plain = LaunchSpec(argv=("python", "-m", "vllm.entrypoints.openai.api_server"))
    assert stage.launch(plain, ()) == plain  # no cell owes a profile: the launch is untouched
    launch = stage.launch(plain, picked)
    flag = launch.argv.index("--profiler-config")
    config = json.loads(launch.argv[flag + 1])
    traces = store.trace_dir(picked[0].server.server_id).resolve()
    assert config["profiler"] == "torch" and config["torch_profiler_dir"] == str(traces)
    summary_dir = store.profile_dir(picked[0])
    assert summary_dir == tmp_path / "profiles" / plan.matrix.name / picked[0].cell_id
    summary_dir.mkdir(parents=True)
    (summary_dir / "summary.json").write_text("{}")  # unreadable summary: still missing
    assert stage.owed(plan.cells) == tuple(picked)



def test_a_cell_whose_nsys_capture_is_missing_is_profiled_again(write_matrix: Callable[..., Path],
                                                                tmp_path: Path) -> None:
    from harness.profiling import ProfileOutcome, ProfileSummary, write_summary

    plan = expand(load_matrix(write_matrix(MATRIX.replace("concurrency: 2}]}", "concurrency: 2}], nsys_cells: "
                                                          "[{concurrency: 2}]}"))))
    store = Store(tmp_path / "reports", plan.matrix.name)
    (cell,) = profiled(plan.matrix.profile, plan.cells)
    torch_only = ProfileSummary(cell_id=cell.cell_id, outcome=ProfileOutcome.missing("vllm", "torch", "failed", "x"))
    write_summary(torch_only, store.profile_dir(cell))  # a run stopped after the torch window, before nsys
    stage = ProfileStage(plan.matrix.profile, store)
    assert stage.owed(plan.cells) == (cell,) and stage.under_nsys(plan.cells) == [cell]


def test_a_hung_nsys_capture_is_retried_without_cpu_sampling(write_matrix: Callable[..., Path], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector is replaced by one that hangs whenever it samples (docs/cpu-engine.md: the real one did)."""
    from harness.profiling import CpuCaptureRun, ProfiledServer, ProfileOutcome, read_summary
    from harness.profiling import profiled_cells as profile_stage

    plan = expand(load_matrix(write_matrix(MATRIX.replace("concurrency: 2}]}", "concurrency: 2}], nsys_cells: "
                                                          "[{concurrency: 2}]}"))))
    store = Store(tmp_path / "reports", plan.matrix.name)
    (cell,) = profiled(plan.matrix.profile, plan.cells)
    sampled: list[bool] = []

    async def capture(server: ProfiledServer, out: Path, window: CpuWindow, run_load: object) -> CpuCaptureRun:
        sampled.append(window.sample)
        if window.sample:
            return CpuCaptureRun(outcome=ProfileOutcome.missing("vllm", "nsys", "failed", "hung"), window=window,
                                 hung=True)
        return CpuCaptureRun(outcome=ProfileOutcome.missing("vllm", "nsys", "no_output", "no report"), window=window)

    monkeypatch.setattr(profile_stage, "capture_cpu_window", capture)
    server = ProfiledServer(LaunchSpec(argv=("serve",)), "127.0.0.1", 1)
    asyncio.run(ProfileStage(plan.matrix.profile, store).nsys(cell, server, lambda seconds: asyncio.sleep(0), 10.0))
    assert sampled == [True, False]
    summary = read_summary(store.profile_dir(cell))
    assert summary is not None and summary.nsys_cpu is not None
    run = summary.nsys_cpu.run
    assert not run.window.sample and run.note is not None and "hung after its window" in run.note


def test_the_nsys_floor_is_the_engines_unless_the_matrix_sets_one(write_matrix: Callable[..., Path]) -> None:
    # vLLM's 110 s guards a measured nsys hang on vLLM servers; SGLang's captures opened sooner without one
    from harness.profiling import nsys_floor_s

    matrix = BASE_MATRIX + "  runtime: [vllm, sglang]\nprofile: {cells: [{concurrency: 2}]}\n"
    plan = expand(load_matrix(write_matrix(matrix)))
    spec = plan.matrix.profile
    assert spec is not None and spec.nsys_delay_floor_s is None
    floors = {c.server.runtime: nsys_floor_s(spec, c) for c in plan.cells}
    assert floors == {"vllm": 110, "sglang": 1}
    pinned = spec.model_copy(update={"nsys_delay_floor_s": 45})
    assert {nsys_floor_s(pinned, c) for c in plan.cells} == {45}
