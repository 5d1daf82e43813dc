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
