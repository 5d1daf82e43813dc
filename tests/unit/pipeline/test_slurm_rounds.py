"""The Slurm controller's checks before submission: a replica across nodes needs an engine with multi-node flags."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline.slurm_rounds import _check_multi_node
from harness.plan import expand
from harness.servers.vllm import VllmRuntime

MATRIX = """
name: g
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
axes: {parallel: [{tp: 8, dp: 2}]}
runtimes: {vllm: {python: /opt/old-vllm/bin/python}}
executor: {kind: slurm, gpus_per_node: 8}
"""


def test_an_engine_without_multi_node_flags_is_refused(write_matrix: Callable[[str], Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    server = expand(load_matrix(write_matrix(MATRIX))).groups[0].server
    monkeypatch.setattr(VllmRuntime, "engine_version", lambda self, server: "0.10.2")
    with pytest.raises(ConfigError, match=r"vllm 0.10.2 has no multi-node flags \(they arrived in 0.11.1\)") as err:
        _check_multi_node(server, "g.yaml")
    assert "runtimes.vllm.python" in str(err.value) and "g.yaml" in str(err.value)
    monkeypatch.setattr(VllmRuntime, "engine_version", lambda self, server: "0.32.0")
    _check_multi_node(server, "g.yaml")


def test_the_installed_engine_version_is_read_from_its_interpreter(write_matrix: Callable[[str], Path]) -> None:
    server = expand(load_matrix(write_matrix(MATRIX.replace("/opt/old-vllm/bin/python", "python3")))).groups[0].server
    version = VllmRuntime().engine_version(server.model_copy(update={"runtime_env": server.runtime_env.model_copy(
        update={"python": None})}))
    pytest.importorskip("vllm")
    assert version is not None and version.split(".")[0].isdigit()
