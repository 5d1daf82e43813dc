from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import expand
from tests.conftest import BASE_MATRIX

REPO = Path(__file__).resolve().parents[2]


def test_cells_sharing_a_server_differ_only_client_side(write_matrix: Callable[[str], Path]) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n  precision: [bf16, bf16-kvfp8]\n"))
    plan = expand(matrix)
    assert len(plan.groups) == 4  # 2 speculation x 2 precision; concurrency never adds a launch
    assert all(len(g.cells) == 2 for g in plan.groups)
    for group in plan.groups:
        assert {c.server.server_id for c in group.cells} == {group.server.server_id}


def test_ids_are_stable_and_distinct(write_matrix: Callable[[str], Path]) -> None:
    path = write_matrix(BASE_MATRIX)
    first = [c.cell_id for c in expand(load_matrix(path)).cells]
    second = [c.cell_id for c in expand(load_matrix(path)).cells]
    assert first == second
    assert len(set(first)) == len(first)


def test_id_ignores_timeouts_but_not_what_is_measured(write_matrix: Callable[[str], Path]) -> None:
    base = expand(load_matrix(write_matrix(BASE_MATRIX))).cells[0].cell_id
    slower = expand(load_matrix(write_matrix(BASE_MATRIX + "server: {startup_timeout_s: 5}\n"))).cells[0].cell_id
    seeded = expand(load_matrix(write_matrix(BASE_MATRIX + "server: {seed: 7}\n"))).cells[0].cell_id
    assert base == slower
    assert base != seeded


def test_adding_an_axis_value_keeps_existing_ids(write_matrix: Callable[[str], Path]) -> None:
    before = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX))).cells}
    wider = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 2, 8]")
    after = {c.cell_id for c in expand(load_matrix(write_matrix(wider))).cells}
    assert before < after  # resume keeps finished cells when a sweep grows


def test_excludes_match_partial_values(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX + "  speculation: [off, {method: mtp, k: 2}]\nexclude:\n  - {speculation: mtp, concurrency: 2}\n"
    labels = [c.label for c in expand(load_matrix(write_matrix(text))).cells]
    assert labels == ["m/vllm/bf16/tp1/off/w/c1", "m/vllm/bf16/tp1/off/w/c2", "m/vllm/bf16/tp1/mtp2/w/c1"]


def test_default_matrix_plan() -> None:
    plan = expand(load_matrix(REPO / "matrices" / "default.yaml"))
    labels = {g.server.label for g in plan.groups}
    assert labels == {
        "tiny-deepseek-v3/vllm/bf16/tp1/off", "tiny-deepseek-v3/vllm/bf16/tp1/mtp1",
        "tiny-qwen3-moe/vllm/bf16/tp1/off", "tiny-qwen3-moe/vllm/bf16/tp1/ngram3",
        "tiny-qwen3-moe/vllm/bf16-kvfp8/tp1/off",
    }
    assert len(plan.cells) == 15


def test_ids_keep_the_formula_they_were_first_published_with(write_matrix: Callable[[str], Path]) -> None:
    # New optional settings (load pattern, repeats, workload fields) must not rename cells measured before.
    from harness.plan import _digest

    cell = expand(load_matrix(write_matrix(BASE_MATRIX))).cells[0]
    first = {"kind": "random", "input_tokens": 16, "output_tokens": 8, "range_ratio": 0.0, "num_requests": 4,
             "warmup_requests": 1, "api": "completions", "ignore_eos": True, "temperature": 0.0, "seed": 0}
    assert cell.cell_id == _digest({"server": cell.server.server_id, "workload": first, "concurrency": 1})
    assert cell.label.endswith("/w/c1")


def test_request_rate_axis_repeats_and_load_enter_ids_and_labels(write_matrix: Callable[[str], Path]) -> None:
    base = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX))).cells}
    rated = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [.inf, 4]\n")))
    assert len(rated.cells) == 4 and len(rated.groups) == 1  # a rate is client-side: no extra launch
    assert [c.load.request_rate for c in rated.cells] == [None, 4.0, None, 4.0]
    assert {c.cell_id for c in rated.cells if c.load.request_rate is None} == base
    assert rated.cells[1].label.endswith("/w/c1/r4")
    repeated = expand(load_matrix(write_matrix(BASE_MATRIX + "repeats: 3\nload: {duration_s: 30}\n"))).cells
    assert all(c.repeats == 3 and c.load.duration_s == 30 for c in repeated)
    assert not {c.cell_id for c in repeated} & base
    excluded = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [2, 4]\nexclude: [{request_rate: 4}]\n")))
    assert {c.load.request_rate for c in excluded.cells} == {2.0}
