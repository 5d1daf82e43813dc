"""The general plugin of SGLang that clocks its expert distribution recorder: found as an entry point from its folder,
silent unless the harness asks, and, applied by SGLang's own hook registry (its source file, read from the SGLang
source ``make setup`` installs) to a recorder of the same shape, it adds the recorder's time and writes it into the
dump. The real recorder's names are checked in tests/contract/test_expert_load_sources.py, the whole path against a
real SGLang server in tests/integration/test_sglang_cpu.py."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import harness_sglang_expert_load as plugin
import pytest

from harness.servers.expert_load_collectors import SGLANG_PLUGIN_DIR, SGLANG_RECORDER_VERSION

from tests.support.engines import SGLANG_DIR

REGISTRY_SOURCE = SGLANG_DIR / "sglang" / "srt" / "plugins" / "hook_registry.py"


class Recorder:
    """The recorder's methods the plugin wraps, each taking a known time."""

    def _on_forward_pass_start(self, batch: object) -> None:
        time.sleep(0.01)

    def _on_forward_pass_end(self, pass_id: int, outputs: dict[str, Any]) -> None:
        time.sleep(0.01)

    def _on_hook(self, hook_name: str, **kwargs: Any) -> None:
        time.sleep(0.01)

    def _reset(self) -> None:
        return None


@pytest.fixture
def sglang(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, types.ModuleType]]:
    """SGLang's real hook registry and a recorder module of the real one's shape, where the plugin's targets point."""
    if not REGISTRY_SOURCE.is_file():
        pytest.fail(f"SGLang's source is not at {SGLANG_DIR}: run make setup")
    spec = importlib.util.spec_from_file_location("sglang.srt.plugins.hook_registry", REGISTRY_SOURCE)
    assert spec and spec.loader
    registry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registry)
    recorder = types.ModuleType(plugin.RECORDER)
    written: list[tuple[str, dict[str, Any]]] = []
    recorder._ExpertDistributionRecorderReal = type("_ExpertDistributionRecorderReal", (Recorder,), {})  # type: ignore[attr-defined]
    recorder._dump_to_file = lambda name, data: written.append((name, dict(data)))  # type: ignore[attr-defined]
    recorder.written = written  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sglang.srt.plugins.hook_registry", registry)
    for package in ("sglang", "sglang.srt", "sglang.srt.eplb"):  # what the registry's resolve_name walks through
        monkeypatch.setitem(sys.modules, package, types.ModuleType(package))
    monkeypatch.setitem(sys.modules, plugin.RECORDER, recorder)
    plugin._clock["seconds"] = 0.0
    yield registry, recorder
    registry.HookRegistry.reset()


def test_sglang_finds_it_as_a_general_plugin_from_its_folder() -> None:
    (dist,) = importlib.metadata.distributions(path=[str(SGLANG_PLUGIN_DIR)])
    (entry,) = dist.entry_points.select(group="sglang.srt.plugins")
    assert entry.load() is plugin.register
    assert dist.version == plugin.SGLANG_VERSION == SGLANG_RECORDER_VERSION


def test_it_registers_nothing_unless_the_harness_asks(sglang: tuple[Any, types.ModuleType],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    registry, _ = sglang
    monkeypatch.delenv(plugin.ENABLE_ENV, raising=False)
    plugin.register()
    assert not registry.HookRegistry._hooks


def test_the_recorders_time_goes_into_its_dump(sglang: tuple[Any, types.ModuleType],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    registry, recorder = sglang
    monkeypatch.setenv(plugin.ENABLE_ENV, "1")
    plugin.register()
    registry.HookRegistry.apply_hooks()
    real = recorder._ExpertDistributionRecorderReal()
    real._on_forward_pass_start(None)
    real._reset()  # start_expert_distribution_record: what came before is not the cell's
    real._on_forward_pass_start(None)
    for _ in range(3):  # one call a MoE layer
        real._on_hook("on_select_experts", topk_ids=None)
    real._on_forward_pass_end(1, {})
    recorder._dump_to_file("expert_distribution_recorder_1.pt", {"logical_count": "counts"})
    ((name, data),) = recorder.written
    assert name == "expert_distribution_recorder_1.pt" and data["logical_count"] == "counts"
    assert 0.05 <= data[plugin.DUMP_KEY] < 0.05 + 1.0  # five calls of 10 ms, not the one before the reset
