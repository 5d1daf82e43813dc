"""The one seam over NVML: every call the harness makes to ``pynvml`` (nvidia-ml-py, the optional ``gpu`` extra).

``pynvml`` is imported only inside ``PynvmlSeam.init``, so the harness imports and runs without it. Its errors are
translated here into ``NvmlError`` with a ``kind`` the sampler acts on, so nothing else knows NVML's error
classes::

    unavailable    no library, no driver, no GPU: telemetry is "not available" for the run
    lost           the GPU fell off the bus or vanished (GpuIsLost, NotFound): stop sampling that device
    not_supported  this device has no such counter (e.g. the energy counter before Volta): leave the field empty
    other          anything else: the sample is skipped

Tests put a double with the same methods behind ``NvmlSeam``; nothing else in the harness touches NVML.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal, Protocol

ErrorKind = Literal["unavailable", "lost", "not_supported", "other"]


class NvmlError(Exception):
    """An NVML call failed; ``kind`` says what the caller should do about it."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class NvmlSeam(Protocol):
    """What the sampler needs from NVML. Units are NVML's own: mW, mJ, %, bytes, MHz, °C."""

    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def driver_version(self) -> str: ...
    def device_count(self) -> int: ...
    def handle(self, index: int) -> object: ...
    def name(self, handle: object) -> str: ...
    def power_mw(self, handle: object) -> int: ...
    def energy_mj(self, handle: object) -> int: ...
    def utilization_pct(self, handle: object) -> tuple[int, int]: ...
    def memory_used_bytes(self, handle: object) -> int: ...
    def clocks_mhz(self, handle: object) -> tuple[int, int]: ...
    def temperature_c(self, handle: object) -> int: ...


# NVML return codes (their pynvml names) → what they mean to the sampler; any other code is "other".
_KINDS_BY_NAME: dict[str, ErrorKind] = {
    "NVML_ERROR_UNINITIALIZED": "unavailable",
    "NVML_ERROR_DRIVER_NOT_LOADED": "unavailable",
    "NVML_ERROR_LIBRARY_NOT_FOUND": "unavailable",
    "NVML_ERROR_GPU_IS_LOST": "lost",
    "NVML_ERROR_NOT_FOUND": "lost",
    "NVML_ERROR_NOT_SUPPORTED": "not_supported",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "not_supported",
}


class PynvmlSeam:
    """The real NVML, through nvidia-ml-py."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._kinds: dict[int, ErrorKind] = {}

    def _call(self, fn: str, *args: Any) -> Any:
        nvml = self._nvml
        try:
            return getattr(nvml, fn)(*args)
        except nvml.NVMLError as exc:
            raise NvmlError(self._kinds.get(getattr(exc, "value", -1), "other"), f"{fn}: {exc}") from exc

    def init(self) -> None:
        try:
            pynvml = importlib.import_module("pynvml")
        except ImportError:
            raise NvmlError("unavailable", "nvidia-ml-py is not installed (pip install 'harness[gpu]')") from None
        self._nvml = pynvml
        self._kinds = {getattr(pynvml, name): kind for name, kind in _KINDS_BY_NAME.items() if hasattr(pynvml, name)}
        self._call("nvmlInit")

    def shutdown(self) -> None:
        self._call("nvmlShutdown")

    def driver_version(self) -> str:
        return str(self._call("nvmlSystemGetDriverVersion"))

    def device_count(self) -> int:
        return int(self._call("nvmlDeviceGetCount"))

    def handle(self, index: int) -> object:
        return self._call("nvmlDeviceGetHandleByIndex", index)

    def name(self, handle: object) -> str:
        return str(self._call("nvmlDeviceGetName", handle))

    def power_mw(self, handle: object) -> int:
        return int(self._call("nvmlDeviceGetPowerUsage", handle))

    def energy_mj(self, handle: object) -> int:
        return int(self._call("nvmlDeviceGetTotalEnergyConsumption", handle))

    def utilization_pct(self, handle: object) -> tuple[int, int]:
        rates = self._call("nvmlDeviceGetUtilizationRates", handle)
        return int(rates.gpu), int(rates.memory)

    def memory_used_bytes(self, handle: object) -> int:
        return int(self._call("nvmlDeviceGetMemoryInfo", handle).used)

    def clocks_mhz(self, handle: object) -> tuple[int, int]:
        nvml = self._nvml
        return (int(self._call("nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_SM)),
                int(self._call("nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_MEM)))

    def temperature_c(self, handle: object) -> int:
        return int(self._call("nvmlDeviceGetTemperature", handle, self._nvml.NVML_TEMPERATURE_GPU))
