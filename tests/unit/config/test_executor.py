"""The executor section: local by default, Slurm settings validated when the matrix loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import LocalExecutor, SlurmExecutor, load_matrix
from harness.errors import ConfigError

BASE = """
name: m
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
"""


def test_local_is_the_default(write_matrix: Callable[[str], Path]) -> None:
    assert load_matrix(write_matrix(BASE)).executor == LocalExecutor()


def test_slurm_settings(write_matrix: Callable[[str], Path]) -> None:
    matrix = load_matrix(write_matrix(BASE + "executor: {kind: slurm, partition: gpu, gpus_per_node: 8, "
                                             "max_parallel: 4, sbatch_args: {constraint: h100}}\n"))
    assert isinstance(matrix.executor, SlurmExecutor)
    assert (matrix.executor.partition, matrix.executor.gpus_per_node, matrix.executor.max_parallel) == ("gpu", 8, 4)


@pytest.mark.parametrize(("text", "key", "hint"), [
    ("executor: {kind: kubernetes}", "executor", "local"),
    ("executor: {kind: slurm, partion: gpu}", "executor", "partion"),
    ("executor: {kind: slurm, sbatch_args: {--exclusive: ''}}", "executor", "without dashes"),
    ("executor: {kind: slurm, sbatch_args: {nodes: '4'}}", "executor", "gpus_per_node"),
    ("executor: {kind: slurm, mem: lots}", "executor", "mem"),
    ("executor: {kind: slurm, gpus_per_node: 0}", "executor", "gpus_per_node"),
])
def test_bad_executor_settings_name_the_key(write_matrix: Callable[[str], Path], text: str, key: str,
                                            hint: str) -> None:
    path = write_matrix(BASE + text + "\n")
    with pytest.raises(ConfigError) as err:
        load_matrix(path)
    message = str(err.value)
    assert str(path) in message and key in message and hint in message, message
