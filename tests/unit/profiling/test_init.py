"""The curated public surface of harness.profiling and harness.telemetry (sorted, complete, importable)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["harness.profiling", "harness.telemetry"])
def test_all_is_sorted_and_exports_every_public_name(package: str) -> None:
    module = importlib.import_module(package)
    public = [name for name in vars(module) if not name.startswith("_") and not isinstance(
        getattr(module, name), type(importlib))]
    assert module.__all__ == sorted(public, key=str.casefold)


def test_importing_them_loads_no_engine_and_no_nvml() -> None:
    # pynvml is an optional extra imported only inside the seam; the parsers never need torch or vllm.
    code = ("import sys, harness.profiling, harness.telemetry; "
            "print(sorted(m for m in ('pynvml', 'torch', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
