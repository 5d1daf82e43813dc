"""Shared fixtures: small matrices written to a temp dir."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

BASE_MATRIX = """
name: t
models:
  m: {id: "fixture:tiny-qwen3-moe"}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}
axes:
  concurrency: [1, 2]
"""


@pytest.fixture
def write_matrix(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "matrix.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write
