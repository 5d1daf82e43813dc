"""What machine this is: the one place that reads the CPU's identity and flags, and asks NVML for GPUs.

A baseline is kept per machine and a finding may depend on the CPU (MLA on a CPU without AMX), so the machine's
identity decides verdicts. It is read here and nowhere else, which is also what makes it injectable: with
``HARNESS_CPUINFO`` naming a file in ``/proc/cpuinfo``'s format, that file *is* the machine (NVML is not asked).
The tests run their machine-dependent checks under an AMD and an Intel identity that way
(``tests/support/hosts.py``), so no verdict a test expects depends on the runner it happens to land on.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

CPUINFO_ENV = "HARNESS_CPUINFO"
PROC_CPUINFO = Path("/proc/cpuinfo")


# The widest vector extension first: what decides which kernels a CPU engine runs (vLLM's CPU build and SGLang's
# need AVX-512 or AMX for some paths), so two CPUs of one model name but different ISAs are different machines.
_ISA_LEVELS: tuple[tuple[str, str], ...] = (
    ("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx2", "AVX2"), ("sve", "SVE"), ("asimd", "NEON"))


class HardwareInfo(BaseModel):
    """A machine as a baseline knows it: kind (cpu / gpu), model name, count, a CPU's widest vector extension, and
    the GPU driver."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    count: int
    driver: str | None = None
    isa: str | None = None
    """A CPU's widest vector extension (``AVX2``, ``AVX-512``, ``AMX``); None for GPUs and in records written
    before it was read, which therefore match no machine read since."""

    @property
    def fingerprint(self) -> str:
        return (f"{self.kind}: {self.name} x{self.count}" + (f" {self.isa}" if self.isa else "")
                + (f" (driver {self.driver})" if self.driver else ""))


def injected_cpuinfo() -> Path | None:
    """The cpuinfo file standing in for this machine's, when ``HARNESS_CPUINFO`` names one."""
    value = os.environ.get(CPUINFO_ENV)
    return Path(value) if value else None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def cpu_inventory(cpuinfo: Path | None = None) -> HardwareInfo:
    """CPU model name and logical cores, from /proc/cpuinfo (os.cpu_count() where it is unreadable)."""
    text = _read(cpuinfo or injected_cpuinfo() or PROC_CPUINFO)
    models = re.findall(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    cores = len(re.findall(r"^processor\s*:", text, re.MULTILINE)) or os.cpu_count() or 0
    isa = next((label for flag, label in _ISA_LEVELS if flag in _flags(text)), None)
    return HardwareInfo(kind="cpu", name=models[0].strip() if models else "unknown CPU", count=cores, isa=isa)


def _flags(text: str) -> frozenset[str]:
    # x86 says "flags", Arm "Features"
    found = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, re.MULTILINE)
    return frozenset(found.group(1).split()) if found else frozenset()


def cpu_flags() -> frozenset[str]:
    """The first CPU's feature flags (``avx512f``, ``amx_tile``, ...); empty where cpuinfo is unreadable."""
    return _flags(_read(injected_cpuinfo() or PROC_CPUINFO))


def cpu_has_amx() -> bool:
    return "amx_tile" in cpu_flags()


def cpu_has_avx512() -> bool:
    return "avx512f" in cpu_flags()


def usable_cores() -> tuple[int, ...]:
    """The core ids this process may run on (its affinity mask, which a cgroup or ``taskset`` narrows); with an
    injected cpuinfo, that file's processors."""
    if (injected := injected_cpuinfo()) is not None:
        ids = re.findall(r"^processor\s*:\s*(\d+)", _read(injected), re.MULTILINE)
        return tuple(sorted(int(i) for i in ids))
    return tuple(sorted(os.sched_getaffinity(0)))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)  # older nvidia-ml-py returns bytes


def nvml_inventory() -> HardwareInfo | None:
    """GPU name, count and driver through NVML; None where nvidia-ml-py or a GPU is absent. The only NVML seam."""
    try:
        import pynvml  # nvidia-ml-py: imported here only, so machines without it never need it
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            return None
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        driver = pynvml.nvmlSystemGetDriverVersion()
        return HardwareInfo(kind="gpu", name=_text(name), count=int(count), driver=_text(driver))
    finally:
        pynvml.nvmlShutdown()


def hardware_info() -> HardwareInfo:
    """The GPUs when NVML sees any, else the CPU: what this machine would run a matrix on. An injected cpuinfo is
    the whole machine."""
    if injected_cpuinfo() is not None:
        return cpu_inventory()
    return nvml_inventory() or cpu_inventory()
