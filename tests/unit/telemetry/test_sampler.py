"""The background sampler against a test double behind the NVML seam, including a GPU that vanishes mid-run."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from harness.telemetry import NvmlError, TelemetrySampler, summarize_recording


class FakeGpu:
    def __init__(self, name: str, watts: float, lost_after: int | None = None, energy: bool = True) -> None:
        self.name, self.watts, self.lost_after, self.energy = name, watts, lost_after, energy
        self.reads = 0
        self.energy_mj = 1_000_000_000  # counts from driver load, not from zero


class FakeNvml:
    """Implements ``NvmlSeam``; each GPU's power is constant and its energy counter advances with ``clock``.

    The sampler is given ``clock`` too: a virtual time that moves 0.1 s per reading, so energy over the sampled
    span is exactly power x span whatever the machine's scheduling does to the thread.
    """

    def __init__(self, gpus: list[FakeGpu], init_error: NvmlError | None = None) -> None:
        self.gpus, self.init_error = gpus, init_error
        self.lock = threading.Lock()
        self.now = 0.0
        self.shut = False

    def clock(self) -> float:
        with self.lock:
            self.now += 0.1
            return self.now

    def _gpu(self, handle: object) -> FakeGpu:
        gpu = self.gpus[int(handle)]  # type: ignore[call-overload]
        with self.lock:
            gpu.reads += 1
            if gpu.lost_after is not None and gpu.reads > gpu.lost_after:
                raise NvmlError("lost", "nvmlDeviceGetPowerUsage: GPU is lost")
        return gpu

    def init(self) -> None:
        if self.init_error:
            raise self.init_error

    def shutdown(self) -> None:
        self.shut = True

    def driver_version(self) -> str:
        return "570.86.15"

    def device_count(self) -> int:
        return len(self.gpus)

    def handle(self, index: int) -> object:
        return index

    def name(self, handle: object) -> str:
        return self.gpus[int(handle)].name  # type: ignore[call-overload]

    def power_mw(self, handle: object) -> int:
        return int(self._gpu(handle).watts * 1000)

    def energy_mj(self, handle: object) -> int:
        gpu = self._gpu(handle)
        if not gpu.energy:
            raise NvmlError("not_supported", "nvmlDeviceGetTotalEnergyConsumption: Not Supported")
        return gpu.energy_mj + int(self.now * gpu.watts * 1000)

    def utilization_pct(self, handle: object) -> tuple[int, int]:
        self._gpu(handle)
        return 87, 41

    def memory_used_bytes(self, handle: object) -> int:
        self._gpu(handle)
        return 120 * 2**30

    def clocks_mhz(self, handle: object) -> tuple[int, int]:
        self._gpu(handle)
        return 1980, 3201

    def temperature_c(self, handle: object) -> int:
        self._gpu(handle)
        return 64


def test_samples_every_gpu_until_stopped() -> None:
    nvml = FakeNvml([FakeGpu("NVIDIA H200", 600.0), FakeGpu("NVIDIA H200", 500.0)])
    with TelemetrySampler(nvml, interval_s=0.01, clock=nvml.clock) as sampler:
        time.sleep(0.15)
    recording = sampler.recording
    assert recording is not None and recording.available and recording.driver_version == "570.86.15"
    assert nvml.shut
    for device in recording.devices:
        assert len(device.samples) >= 3 and device.lost_reason is None and device.unsupported == ()
        first = device.samples[0]
        assert (first.sm_util_pct, first.mem_util_pct, first.sm_clock_mhz, first.mem_clock_mhz) == (87, 41, 1980, 3201)
        assert first.memory_used_bytes == 120 * 2**30 and first.temperature_c == 64
        assert [s.t_s for s in device.samples] == sorted(s.t_s for s in device.samples)
    summary = summarize_recording(recording, output_tokens=1000, output_tok_s=5000.0)
    assert summary.power_w_per_device_mean == pytest.approx(550.0)
    assert summary.energy_source == "counter"
    # the counters advanced at 1,100 W in all: the energy is that power over the sampled span
    assert summary.duration_s is not None and summary.energy_j_total is not None
    assert summary.energy_j_total == pytest.approx(1100.0 * summary.duration_s)
    assert summary.energy_j_per_output_token == pytest.approx(summary.energy_j_total / 1000)
    assert summary.tok_s_per_mw == pytest.approx(5000.0 / 1100.0 * 1e6)


def test_a_gpu_that_vanishes_mid_run_is_marked_and_keeps_its_samples() -> None:
    nvml = FakeNvml([FakeGpu("H100", 700.0), FakeGpu("H100", 700.0, lost_after=6 * 3)])  # 3 full samples
    with TelemetrySampler(nvml, interval_s=0.01) as sampler:
        time.sleep(0.15)
    assert sampler.recording is not None
    healthy, lost = sampler.recording.devices
    assert lost.lost_reason is not None and "GPU 1 lost at" in lost.lost_reason and "GPU is lost" in lost.lost_reason
    assert len(lost.samples) == 3  # the half-read sample of the vanishing GPU is dropped
    assert len(healthy.samples) > 3 and healthy.lost_reason is None
    summary = summarize_recording(sampler.recording, output_tokens=100)
    assert summary.available and summary.reason == lost.lost_reason
    assert [d.status for d in summary.devices] == ["ok", "lost"]
    assert summary.devices[1].power_w_mean == pytest.approx(700.0)
    assert summary.energy_j_total is None and summary.energy_j_per_output_token is None  # partial: not totalled


def test_an_unsupported_counter_stays_empty_and_is_asked_once() -> None:
    nvml = FakeNvml([FakeGpu("T4", 70.0, energy=False)])
    with TelemetrySampler(nvml, interval_s=0.01, clock=nvml.clock) as sampler:
        time.sleep(0.05)
    assert sampler.recording is not None
    device = sampler.recording.devices[0]
    assert device.unsupported == ("energy_mj",) and all(s.energy_mj is None for s in device.samples)
    summary = summarize_recording(sampler.recording)
    assert summary.energy_source == "integrated_power"
    assert summary.duration_s is not None
    assert summary.energy_j_total == pytest.approx(70.0 * summary.duration_s)


def test_no_nvml_is_not_available_with_the_reason() -> None:
    nvml = FakeNvml([], init_error=NvmlError("unavailable", "nvmlInit: NVML Shared Library Not Found"))
    sampler = TelemetrySampler(nvml)
    sampler.start()
    recording = sampler.stop()
    assert not recording.available and recording.devices == ()
    assert recording.reason == "NVML not available: nvmlInit: NVML Shared Library Not Found"
    assert not nvml.shut  # never initialised, so never shut down


def test_no_gpu_is_not_available() -> None:
    recording = TelemetrySampler(FakeNvml([])).__enter__().stop()
    assert (recording.available, recording.reason) == (False, "NVML found no GPU")


def test_stop_twice_and_stop_without_start() -> None:
    sampler = TelemetrySampler(FakeNvml([FakeGpu("H200", 1.0)]), interval_s=0.01)
    sampler.start()
    first = sampler.stop()
    assert sampler.stop() is first
    never = TelemetrySampler(FakeNvml([FakeGpu("H200", 1.0)])).stop()
    assert (never.available, never.reason) == (False, "the sampler was never started")


async def test_async_context_manager_around_a_load() -> None:
    nvml = FakeNvml([FakeGpu("B200", 1000.0)])
    async with TelemetrySampler(nvml, interval_s=0.01) as sampler:
        await asyncio.sleep(0.05)
    assert sampler.recording is not None and len(sampler.recording.devices[0].samples) >= 2


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        TelemetrySampler(FakeNvml([]), interval_s=0)
