"""The profile stage: which cells are profiled and how their server is launched."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import expand
from harness.profiling.stage import missing_profiles, profiled, with_profiler
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
    assert missing_profiles(plan.matrix, plan.cells, store) == picked
    launch = with_profiler(LaunchSpec(argv=("python", "-m", "vllm.entrypoints.openai.api_server")), picked[0],
                           tmp_path / "traces")
    flag = launch.argv.index("--profiler-config")
    config = json.loads(launch.argv[flag + 1])
    assert config["profiler"] == "torch" and config["torch_profiler_dir"] == str((tmp_path / "traces").resolve())
    summary_dir = store.profile_dir(picked[0])
    assert summary_dir == tmp_path / "profiles" / plan.matrix.name / picked[0].cell_id
    summary_dir.mkdir(parents=True)
    (summary_dir / "summary.json").write_text("{}")  # unreadable summary: still missing
    assert missing_profiles(plan.matrix, plan.cells, store) == picked



def test_a_cell_whose_nsys_capture_is_missing_is_profiled_again(write_matrix: Callable[..., Path],
                                                                tmp_path: Path) -> None:
    from harness.profiling import ProfileOutcome, ProfileSummary, write_summary

    plan = expand(load_matrix(write_matrix(MATRIX.replace("concurrency: 2}]}", "concurrency: 2}], nsys_cells: "
                                                          "[{concurrency: 2}]}"))))
    store = Store(tmp_path / "reports", plan.matrix.name)
    (cell,) = profiled(plan.matrix.profile, plan.cells)
    torch_only = ProfileSummary(cell_id=cell.cell_id, outcome=ProfileOutcome.missing("vllm", "torch", "failed", "x"))
    write_summary(torch_only, store.profile_dir(cell))  # a run stopped after the torch window, before nsys
    assert missing_profiles(plan.matrix, plan.cells, store) == [cell]
