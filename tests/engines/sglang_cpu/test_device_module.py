"""The two torch.cpu functions SGLang's expert distribution recorder calls: added where torch lacks them, a torch
that has its own keeps them, and importing the stand-in installs them."""

from __future__ import annotations

import pytest
import torch

from sgl_kernel import device_module


def test_install_adds_only_what_torch_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("is_current_stream_capturing", "empty_cache"):
        monkeypatch.delattr(torch.cpu, name, raising=False)
    assert device_module.install() == ["is_current_stream_capturing", "empty_cache"]
    assert torch.cpu.is_current_stream_capturing() is False  # type: ignore[attr-defined]
    assert torch.cpu.empty_cache() is None  # type: ignore[attr-defined, func-returns-value]
    assert device_module.install() == []


def test_a_torch_of_its_own_keeps_its_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    def own() -> bool:
        return True

    monkeypatch.setattr(torch.cpu, "is_current_stream_capturing", own, raising=False)
    monkeypatch.delattr(torch.cpu, "empty_cache", raising=False)
    assert device_module.install() == ["empty_cache"] and torch.cpu.is_current_stream_capturing is own


def test_the_recorder_finds_them_through_the_device_module() -> None:
    import sgl_kernel  # noqa: F401  (importing the stand-in installs them)

    module = torch.get_device_module("cpu")
    assert module.is_current_stream_capturing() is False and hasattr(module, "empty_cache")
