"""The ``openai`` runtime: any OpenAI-compatible server of an unknown engine, measured as a deployment and never
launched; a matrix that asks the harness to launch it is refused before anything starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan import expand
from harness.servers import check_engines, get_runtime
from harness.servers.engine_reveal import reveal_nothing
from harness.servers.openai_endpoint import OpenAiRuntime

MATRIX: dict[str, Any] = {
    "name": "t",
    "models": {"m": {"id": "fixture:tiny-qwen3-recall"}},
    "workloads": {"w": {"kind": "random", "input_tokens": 16, "output_tokens": 8, "num_requests": 4}},
}
GATEWAY = {"base_url": "https://gateway.example", "model": "m", "served_model": "qwen3", "runtime": "openai"}

WriteMatrix = Callable[[str], Path]


def write(write_matrix: WriteMatrix, **top: Any) -> Path:
    return write_matrix(yaml.safe_dump({**MATRIX, **top}))


def test_the_openai_runtime_is_registered_and_reached_only() -> None:
    runtime = get_runtime("openai")
    assert isinstance(runtime, OpenAiRuntime)
    assert not runtime.launchable and not runtime.machine_bound
    assert runtime.revealer is reveal_nothing and runtime.tool_parsers == {}


def test_it_has_no_command_line_to_launch(write_matrix: WriteMatrix) -> None:
    server = expand(load_matrix(write(write_matrix, deployments={"gw": GATEWAY}))).groups[0].server
    with pytest.raises(ConfigError) as refused:
        get_runtime("openai").engine_args(server, "/models/m", "127.0.0.1", 8000)
    assert refused.value.key == "axes.runtime" and "cannot launch" in refused.value.problem
    assert "deployments.<name>.runtime: openai" in refused.value.fix


def test_a_launched_matrix_naming_it_is_refused(write_matrix: WriteMatrix) -> None:
    path = write(write_matrix, axes={"runtime": ["vllm", "openai"]})
    with pytest.raises(ConfigError) as refused:
        check_engines(load_matrix(path), str(path))
    assert refused.value.key == "axes.runtime"
    assert "openai is the runtime of a server the harness reaches, never launches" in refused.value.problem
    with pytest.raises(ConfigError, match="never launches"):
        load_plan(path)


def test_beside_deployments_it_is_refused_on_the_launch_axis_too(write_matrix: WriteMatrix) -> None:
    path = write(write_matrix, deployments={"gw": GATEWAY}, axes={"runtime": ["openai"]})
    with pytest.raises(ConfigError, match="never launches"):
        load_plan(path)


def test_a_deployment_of_it_plans(write_matrix: WriteMatrix) -> None:
    plan = load_plan(write(write_matrix, deployments={"gw": GATEWAY}))
    (group,) = plan.groups
    assert group.server.runtime == "openai" and group.server.is_deployment
    assert get_runtime("openai").served_model_name(group.server) == "qwen3"


def test_a_deployment_of_an_unknown_engine_is_named_by_its_key(write_matrix: WriteMatrix) -> None:
    path = write(write_matrix, deployments={"gw": {**GATEWAY, "runtime": "tgi"}})
    with pytest.raises(ConfigError) as refused:
        load_plan(path)
    assert refused.value.key == "deployments.gw.runtime" and "unknown runtime 'tgi'" in refused.value.problem
