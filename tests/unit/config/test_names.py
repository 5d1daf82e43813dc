"""Every name a user gives follows one pattern, refused at validation with the key and the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.config.names import NAME_MAX
from harness.errors import ConfigError

MATRIX = """
name: {matrix}
models:
  {model}: {{id: "fixture:tiny-qwen3-moe"}}
workloads:
  {workload}: {{kind: random, input_tokens: 16, output_tokens: 8}}
"""


def matrix(write_matrix: Callable[..., Path], matrix: str = "n", model: str = "m", workload: str = "w") -> Path:
    return write_matrix(MATRIX.format(matrix=matrix, model=model, workload=workload))


@pytest.mark.parametrize("name", ["chat-1k", "Qwen3.30B_A3B", "a", "x" * NAME_MAX])
def test_names_of_letters_digits_dot_underscore_dash_load(write_matrix: Callable[..., Path], name: str) -> None:
    loaded = load_matrix(matrix(write_matrix, model=name, workload=name))
    assert list(loaded.models) == [name] and list(loaded.workloads) == [name]


@pytest.mark.parametrize("name", ['"w</script><script>alert(1)</script>"', '"a/b"', "-lead", '"two words"',
                                  "x" * (NAME_MAX + 1), '".hidden"', '"tab\\tin"'])
@pytest.mark.parametrize("section", ["model", "workload"])
def test_a_name_outside_the_pattern_is_refused_with_its_key_and_the_fix(
        write_matrix: Callable[..., Path], name: str, section: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_matrix(matrix(write_matrix, **{section: name}))
    err = refused.value
    assert err.key.startswith(f"{section}s.") and "is not a valid name" in err.problem
    assert "(joined by '/')" in err.problem and err.fix.startswith("rename it with letters, digits, '.', '_' or '-'")


@pytest.mark.parametrize("name", ["Upper", "x" * (NAME_MAX + 1), "a/b"])
def test_the_matrix_name_is_lower_case_and_bounded(write_matrix: Callable[..., Path], name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_matrix(matrix(write_matrix, matrix=f'"{name}"'))
    assert refused.value.key == "name" and "64 at most" in refused.value.fix


def test_a_long_name_is_shown_cut(write_matrix: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError) as refused:
        load_matrix(matrix(write_matrix, workload="y" * 500))
    assert "(500 characters)" in refused.value.problem and "y" * 100 not in refused.value.problem
