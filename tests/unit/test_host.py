"""The machine's identity: the CPU from cpuinfo, the GPUs through the one NVML seam, and the injected identity."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from harness.host import (
    CPUINFO_ENV,
    HardwareInfo,
    cpu_has_amx,
    cpu_inventory,
    hardware_info,
    nvml_inventory,
    usable_cores,
)

from tests.support.hosts import CPUINFO, ISAS, NAMES, another_machine


@pytest.mark.parametrize("identity", sorted(CPUINFO))
def test_cpu_inventory(identity: str, tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(CPUINFO[identity])
    hw = cpu_inventory(tmp_path / "cpuinfo")
    assert (hw.kind, hw.name, hw.count) == ("cpu", NAMES[identity], 2)
    assert hw.fingerprint == f"cpu: {NAMES[identity]} x2 {ISAS[identity]}"
    assert cpu_inventory(tmp_path / "absent").count >= 1


def test_one_model_name_with_another_isa_is_another_machine(tmp_path: Path) -> None:
    """A cloud's CPU name hides its generation: the same name with AVX2 only is not the AVX-512 machine."""
    wide = CPUINFO["amd-epyc"]
    narrow = wide.replace(" avx512f avx512_bf16", "")
    arm = "processor\t: 0\nFeatures\t: fp asimd sve sve2\n\n"
    found = {}
    for name, text in (("wide", wide), ("narrow", narrow), ("arm", arm), ("old", "processor\t: 0\n")):
        (tmp_path / name).write_text(text)
        found[name] = cpu_inventory(tmp_path / name)
    assert (found["wide"].isa, found["narrow"].isa, found["arm"].isa, found["old"].isa) == ("AVX-512", "AVX2", "SVE",
                                                                                           None)
    assert found["wide"].name == found["narrow"].name and found["wide"].fingerprint != found["narrow"].fingerprint
    assert found["old"].fingerprint == "cpu: unknown CPU x1"  # records from before the ISA was read match no ISA


def test_an_injected_identity_is_the_whole_machine(host: HardwareInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """NVML is not asked when cpuinfo is injected: a GPU runner must not turn the test's CPU into its GPUs."""
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(8))
    assert hardware_info() == host and host.name in NAMES.values() and host.count == 2
    assert cpu_has_amx() == (host.name == NAMES["intel-xeon"])  # the Intel identity has AMX, the AMD one not
    other = another_machine(host)
    assert other.fingerprint != host.fingerprint and other.kind == host.kind
    monkeypatch.delenv(CPUINFO_ENV)
    assert hardware_info().kind == "gpu"  # the real seam again: the fake NVML answers


class _FakeNvml(types.ModuleType):
    """Stands in for nvidia-ml-py behind the one NVML seam."""

    class NVMLError(Exception):
        pass

    def __init__(self, count: int) -> None:
        super().__init__("pynvml")
        self.count, self.shut = count, False

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's own names
        pass

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:  # noqa: N802
        return b"NVIDIA H200"

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return "580.65.06"


def test_nvml_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert nvml_inventory() is None
    fake = _FakeNvml(8)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    hw = nvml_inventory()
    assert hw is not None and hw.fingerprint == "gpu: NVIDIA H200 x8 (driver 580.65.06)" and fake.shut
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(0))
    assert nvml_inventory() is None


def test_usable_cores_are_the_affinity_mask_or_the_injected_machines(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.delenv(CPUINFO_ENV, raising=False)
    import os

    assert set(usable_cores()) == os.sched_getaffinity(0)
    path = tmp_path / "cpuinfo"
    path.write_text("".join(f"processor\t: {n}\nmodel name\t: X\n\n" for n in (0, 1, 2)))
    monkeypatch.setenv(CPUINFO_ENV, str(path))
    assert usable_cores() == (0, 1, 2)
