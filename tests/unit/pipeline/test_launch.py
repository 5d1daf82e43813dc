from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.load import PROMPT_BLOCK
from harness.pipeline import prompt_offset
from harness.pipeline.launch import another_run
from harness.plan import MAX_RUNS, Cell, expand

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import summary


def test_prompt_blocks_never_repeat_on_one_server(write_matrix: Callable[[str], Path]) -> None:
    cells = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [.inf, 4, 8]\nrepeats: 3\n"))).cells
    spans = sorted((prompt_offset(cell, repeat), cell.workload.requests_for(cell.concurrency))
                   for cell in cells for repeat in range(MAX_RUNS + 1))  # every run a minimum could add, the window
    assert len(spans) == 6 * (MAX_RUNS + 1)  # 2 concurrencies x 3 rates
    assert all(start + count <= following for (start, count), (following, _) in zip(spans, spans[1:], strict=False))
    assert all(prompt_offset(cell) % PROMPT_BLOCK == 0 for cell in cells)  # each cell's first run opens its block
    assert prompt_offset(cells[0], 2) == prompt_offset(cells[0]) + 2 * 4  # runs follow one another in the block
    fixed = [c for c in cells if c.load.request_rate is None]
    assert [prompt_offset(c) for c in fixed] == [c.concurrency * PROMPT_BLOCK for c in fixed]  # as always


def test_paired_cells_on_different_servers_send_the_same_prompts(write_matrix: Callable[[str], Path]) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n  request_rate: [4]\n")))
    off, spec = plan.groups
    assert [prompt_offset(c, 1) for c in off.cells] == [prompt_offset(c, 1) for c in spec.cells]


def _cell(write_matrix: Callable[[str], Path], extra: str) -> Cell:
    return expand(load_matrix(write_matrix(BASE_MATRIX + extra))).cells[0]


def test_a_minimum_measured_duration_runs_again_until_it_is_measured(write_matrix: Callable[[str], Path]) -> None:
    cell = _cell(write_matrix, "min_measured_s: 10\n")
    assert another_run(cell, [], 0.0)
    assert another_run(cell, [summary(100, 5)] * 3, 9.9)  # three runs, 9.9 s: one more
    assert not another_run(cell, [summary(100, 5)] * 4, 10.0)  # measured: done
    assert not another_run(cell, [summary(100, 5)] * MAX_RUNS, 1.0)  # the cap, however short each run
    assert not another_run(cell, [summary(0, 5, failed=32)], 0.1)  # every request failed: no more of them


def test_repeats_are_a_floor_under_the_minimum_and_run_alone_without_it(write_matrix: Callable[[str], Path]) -> None:
    floor = _cell(write_matrix, "repeats: 3\nmin_measured_s: 1\n")
    assert another_run(floor, [summary(100, 5)] * 2, 60.0)  # 60 s measured, still 2 of its 3 repeats
    assert another_run(floor, [summary(0, 5, failed=32)] * 2, 0.1)  # failed runs end only the added ones
    assert not another_run(floor, [summary(100, 5)] * 3, 60.0)
    plain = _cell(write_matrix, "repeats: 2\n")
    assert plain.most_runs == 2 and floor.most_runs == MAX_RUNS
    assert another_run(plain, [summary(100, 5)], 0.0) and not another_run(plain, [summary(100, 5)] * 2, 0.0)


def test_the_minimum_joins_the_cell_id_only_when_set(write_matrix: Callable[[str], Path]) -> None:
    base, same = _cell(write_matrix, ""), _cell(write_matrix, "min_measured_s: null\n")
    assert base.cell_id == same.cell_id != _cell(write_matrix, "min_measured_s: 10\n").cell_id


async def test_a_deployment_whose_metrics_fail_keeps_its_client_figures(write_matrix: Callable[[str], Path],
                                                                        tiny_tokenizer_dir: Path,
                                                                        tmp_path: Path) -> None:
    """A deployment that answers while its metrics URL (another host) does not: the cell is measured, without
    server figures, instead of failing as a server that went away would."""
    from harness.pipeline import run_cell
    from harness.servers import RemoteServer, get_runtime
    from harness.store import Store
    from harness_testing.loopback import LoopbackConfig, LoopbackServer

    server = LoopbackServer(LoopbackConfig(model="m"))
    async with server.serve() as url:
        matrix = write_matrix(f"""
name: t
models:
  m: {{id: "{tiny_tokenizer_dir}"}}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 4, num_requests: 4, warmup_requests: 0}}
deployments:
  there: {{base_url: "{url}", model: m, served_model: m, runtime: openai, metrics: "http://127.0.0.1:1"}}
axes: {{concurrency: [1]}}
""")
        cell = expand(load_matrix(matrix)).cells[0]
        store = Store(tmp_path / "out", "t")
        async with RemoteServer(cell.server, store.server_log(cell.server.server_id)) as srv:
            result = await run_cell(cell, srv, get_runtime("openai"), store, load_matrix(matrix).slo)
    assert result.status == "ok", result.reason
    assert result.summary is not None and result.summary.completed == 4 and result.summary.server is None
