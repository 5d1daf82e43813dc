"""The real seam's translation of pynvml, against a stand-in module (no GPU needed) and the real one if installed."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from harness.telemetry import NvmlError, PynvmlSeam


def fake_pynvml(failures: dict[str, int] | None = None) -> types.ModuleType:
    """The slice of pynvml the seam uses; ``failures`` maps a function name to the NVML code it fails with."""
    failures = failures or {}
    mod = types.ModuleType("pynvml")

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            self.value = value
            super().__init__(f"NVML error {value}")

    names = {"NVML_ERROR_UNINITIALIZED": 1, "NVML_ERROR_NOT_SUPPORTED": 3, "NVML_ERROR_NO_PERMISSION": 4,
             "NVML_ERROR_NOT_FOUND": 6, "NVML_ERROR_DRIVER_NOT_LOADED": 9, "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
             "NVML_ERROR_FUNCTION_NOT_FOUND": 13, "NVML_ERROR_GPU_IS_LOST": 15}
    for name, code in names.items():
        setattr(mod, name, code)
    mod.NVMLError = NVMLError  # type: ignore[attr-defined]
    mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM, mod.NVML_TEMPERATURE_GPU = 1, 2, 0  # type: ignore[attr-defined]
    values: dict[str, Any] = {
        "nvmlInit": None, "nvmlShutdown": None, "nvmlSystemGetDriverVersion": "570.86.15", "nvmlDeviceGetCount": 2,
        "nvmlDeviceGetHandleByIndex": "h", "nvmlDeviceGetName": "NVIDIA H200", "nvmlDeviceGetPowerUsage": 612345,
        "nvmlDeviceGetTotalEnergyConsumption": 98765432101,
        "nvmlDeviceGetUtilizationRates": types.SimpleNamespace(gpu=93, memory=57),
        "nvmlDeviceGetMemoryInfo": types.SimpleNamespace(used=130 * 2**30, total=141 * 2**30),
        "nvmlDeviceGetTemperature": 71}

    def make(fn: str) -> Any:
        def call(*args: Any) -> Any:
            if fn in failures:
                raise NVMLError(failures[fn])
            if fn == "nvmlDeviceGetClockInfo":
                return {1: 1980, 2: 3201}[args[1]]
            return values[fn]
        return call

    for fn in [*values, "nvmlDeviceGetClockInfo"]:
        setattr(mod, fn, make(fn))
    return mod


def seam_with(monkeypatch: pytest.MonkeyPatch, failures: dict[str, int] | None = None) -> PynvmlSeam:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(failures))
    seam = PynvmlSeam()
    seam.init()
    return seam


def test_reads_in_nvml_units(monkeypatch: pytest.MonkeyPatch) -> None:
    seam = seam_with(monkeypatch)
    h = seam.handle(0)
    assert (seam.driver_version(), seam.device_count(), seam.name(h)) == ("570.86.15", 2, "NVIDIA H200")
    assert (seam.power_mw(h), seam.energy_mj(h)) == (612345, 98765432101)
    assert seam.utilization_pct(h) == (93, 57)
    assert seam.memory_used_bytes(h) == 130 * 2**30
    assert seam.clocks_mhz(h) == (1980, 3201)
    assert seam.temperature_c(h) == 71
    seam.shutdown()


@pytest.mark.parametrize(("code", "kind"), [(15, "lost"), (6, "lost"), (3, "not_supported"), (13, "not_supported"),
                                            (9, "unavailable"), (4, "other")])
def test_errors_are_translated_to_what_the_sampler_does(monkeypatch: pytest.MonkeyPatch, code: int, kind: str) -> None:
    seam = seam_with(monkeypatch, {"nvmlDeviceGetPowerUsage": code})
    with pytest.raises(NvmlError) as info:
        seam.power_mw("h")
    assert info.value.kind == kind and str(info.value).startswith("nvmlDeviceGetPowerUsage: ")


def test_a_missing_library_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml({"nvmlInit": 12}))
    with pytest.raises(NvmlError) as info:
        PynvmlSeam().init()
    assert info.value.kind == "unavailable"


def test_without_nvidia_ml_py_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    with pytest.raises(NvmlError, match=r"pip install 'harness\[gpu\]'") as info:
        PynvmlSeam().init()
    assert info.value.kind == "unavailable"


def test_the_real_pynvml_on_a_machine_without_a_driver_is_unavailable() -> None:
    pytest.importorskip("pynvml")
    seam = PynvmlSeam()
    try:
        seam.init()
    except NvmlError as exc:
        assert exc.kind == "unavailable"
    else:  # a machine with a GPU: the seam answers for real
        assert seam.device_count() >= 0
        seam.shutdown()
