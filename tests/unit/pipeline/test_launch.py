from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.load import PROMPT_BLOCK
from harness.pipeline import prompt_offset
from harness.plan import expand

from tests.support.matrices import BASE_MATRIX


def test_prompt_blocks_never_repeat_on_one_server(write_matrix: Callable[[str], Path]) -> None:
    cells = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [.inf, 4, 8]\nrepeats: 3\n"))).cells
    offsets = [prompt_offset(cell, repeat) for cell in cells for repeat in range(cell.repeats)]
    assert len(offsets) == 18 == len(set(offsets))  # 2 concurrencies x 3 rates x 3 repeats, all apart
    assert all(offset % PROMPT_BLOCK == 0 for offset in offsets)
    fixed = [c for c in cells if c.load.request_rate is None]
    assert [prompt_offset(c) for c in fixed] == [c.concurrency * PROMPT_BLOCK for c in fixed]  # as always


def test_paired_cells_on_different_servers_send_the_same_prompts(write_matrix: Callable[[str], Path]) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n  request_rate: [4]\n")))
    off, spec = plan.groups
    assert [prompt_offset(c, 1) for c in off.cells] == [prompt_offset(c, 1) for c in spec.cells]
