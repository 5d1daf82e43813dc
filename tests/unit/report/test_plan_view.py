"""`harness plan` with the Slurm executor shows each job: its resources, its estimate, and each node's argv."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from harness.pipeline import load_plan
from harness.report import render_plan

MATRIX = """
name: ds
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}
models: {m: {id: org/m, routed_experts: 256, num_nextn_predict_layers: 1}}
workloads: {w: {kind: random, input_tokens: 1024, output_tokens: 1024, num_requests: 64}}
axes: {runtime: [sglang], parallel: [{tp: 16}], concurrency: [16]}
runtimes: {sglang: {python: /opt/sglang/bin/python}}
executor: {kind: slurm, gpus_per_node: 8, partition: gpu, time_limit_min: 90, container_image: /img/sglang.sqsh}
"""


def test_the_plan_shows_each_job_and_every_nodes_command(write_matrix: Callable[[str], Path]) -> None:
    text = render_plan(load_plan(write_matrix(MATRIX)))
    assert "slurm job: 2 nodes x 8 GPU, 90 min limit, partition gpu; ESTIMATE" in text
    assert "device-hours, $" in text
    nodes = [line for line in text.splitlines() if line.strip().startswith("node ")]
    assert len(nodes) == 2 and "(head, HTTP)" in nodes[0]
    for rank, line in enumerate(nodes):
        argv = shlex.split(line.split(": ", 1)[1])
        assert argv[:2] == ["srun", "--overlap"] and f"--nodelist=<node{rank}>" in argv
        assert "--container-image=/img/sglang.sqsh" in argv
        assert argv[argv.index("--node-rank") + 1] == str(rank) and argv[argv.index("--nnodes") + 1] == "2"


def test_the_plan_says_which_cells_are_profiled_and_which_also_under_nsys(write_matrix: Callable[[str], Path]) -> None:
    from tests.support.matrices import BASE_MATRIX

    text = BASE_MATRIX + "profile: {cells: [{concurrency: 1}, {concurrency: 2}], nsys_cells: [{concurrency: 2}]}\n"
    out = render_plan(load_plan(write_matrix(text)))
    assert out.count("    profile: one more window after its load (the engine's torch profiler)\n") == 1
    assert "(the engine's torch profiler, then Nsight Systems in a launch of its own)" in out
    assert "+ 1 nsys capture launch(es)" in out  # the estimate counts that launch


def test_the_plan_says_a_cell_runs_until_its_minimum_is_measured(write_matrix: Callable[[str], Path]) -> None:
    from tests.support.matrices import BASE_MATRIX

    text = BASE_MATRIX + "repeats: 2\nmin_measured_s: 12\nslo: {ttft_ms: 500}\n"
    out = render_plan(load_plan(write_matrix(text)))
    assert out.count("runs again until 12 s measured (at least 2 runs, at most 50)") == 2
    assert "SLO claims on its 8 requests or more" in out  # 4 requests x 2 repeats, more if the runs are short


def test_a_large_figure_is_never_printed_in_exponent_form() -> None:
    from harness.report.plan_view import _figure

    assert (_figure(4024.4), _figure(45.43), _figure(0.01234)) == ("4,024", "45.4", "0.0123")
