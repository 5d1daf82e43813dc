"""The profile and telemetry stages: which cells are profiled, how their server is launched, and what a CPU cell
records for telemetry (that there is none)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import expand
from harness.profile_stage import missing_profiles, profiled, profiles_root, telemetry, with_profiler
from harness.servers.process import LaunchSpec
from harness.store import Store
from tests.conftest import BASE_MATRIX
from tests.unit.stored_cells import summary

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
    assert profiles_root(store) == tmp_path / "profiles"
    assert missing_profiles(plan.matrix, plan.cells, store) == picked
    launch = with_profiler(LaunchSpec(argv=("python", "-m", "vllm.entrypoints.openai.api_server")), picked[0],
                           tmp_path / "traces")
    flag = launch.argv.index("--profiler-config")
    config = json.loads(launch.argv[flag + 1])
    assert config["profiler"] == "torch" and config["torch_profiler_dir"] == str((tmp_path / "traces").resolve())
    summary_dir = profiles_root(store) / plan.matrix.name / picked[0].cell_id
    summary_dir.mkdir(parents=True)
    (summary_dir / "summary.json").write_text("{}")  # unreadable summary: still missing
    assert missing_profiles(plan.matrix, plan.cells, store) == picked


def test_a_cpu_cell_records_that_it_has_no_gpu_telemetry(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    cell = plan.cells[0]
    with telemetry(cell, store) as output:
        output.summary = summary(320.0, 10.0).model_copy(update={"total_output_tokens": 640})
    data = json.loads((store.cell_dir(cell) / "telemetry.json").read_text())
    assert data["available"] is False and data["power_w_per_device_mean"] is None
    assert data["output_tokens"] == 640 and "no GPU" in data["reason"]
