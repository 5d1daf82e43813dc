"""The strict YAML reader: a key written twice in one mapping is refused with its path and both lines, at any
depth; what YAML allows to repeat (aliases, merge keys, the same key in sibling mappings) still loads."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from harness.config import load_matrix
from harness.config.strict_yaml import DuplicateKeyError, load_yaml
from harness.errors import ConfigError

from tests.support.matrices import BASE_MATRIX


@pytest.mark.parametrize(("text", "path", "line", "first"), [
    ("name: a\nx: 1\nname: b\n", "name", 3, 1),
    ("axes:\n  concurrency: [1]\n  runtime: [vllm]\n  concurrency: [4]\n", "axes.concurrency", 4, 2),
    ("models:\n  m:\n    id: a\n    family: qwen3\n    id: b\n", "models.m.id", 5, 3),
    ("exclude:\n  - {runtime: vllm}\n  - {model: m, runtime: sglang, model: n}\n", "exclude[1].model", 3, 3),
])
def test_a_repeated_key_names_its_path_and_both_lines(text: str, path: str, line: int, first: int) -> None:
    with pytest.raises(DuplicateKeyError) as info:
        load_yaml(text)
    assert (info.value.path, info.value.line, info.value.first_line) == (path, line, first)


def test_what_yaml_may_repeat_still_loads() -> None:
    text = textwrap.dedent("""\
        base: &base {kind: random, input_tokens: 8}
        workloads:
          a: {<<: *base, output_tokens: 4}
          b: {<<: *base, output_tokens: 8}
        models: {m: {id: x}, n: {id: x}}
        """)
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("") is None


def test_a_matrix_with_a_repeated_block_is_refused_before_anything_runs(
        write_matrix: Callable[[str], Path]) -> None:
    path = write_matrix(BASE_MATRIX + "axes:\n  concurrency: [64]\n")  # a second axes: block, pasted below the first
    with pytest.raises(ConfigError) as info:
        load_matrix(path)
    message = str(info.value)
    assert str(path) in message and "axes (line" in message and "written twice, first at line" in message
    assert "fix: keep one of them" in message
