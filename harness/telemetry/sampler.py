"""Background NVML sampling around one cell: every GPU's power, energy counter, utilisation, memory, clocks, heat.

A daemon thread samples every ``interval_s`` (NVML calls are short blocking C calls; a thread keeps them off the
event loop that drives the load). One sample is taken at start and one at stop, so the energy counter's delta
spans the whole window however short. Use it as a context manager, sync or async::

    async with TelemetrySampler(interval_s=0.1) as sampler:
        await run_load()
    recording = sampler.recording   # → telemetry.summary.summarize_recording

Faults never raise: no NVML (no library, no driver, no GPU) gives a recording with ``available=False`` and the
reason; a GPU that is lost mid-run (GpuIsLost / NotFound) stops that device's sampling, keeps what it had, and is
marked lost; a counter the device does not support stays empty (None), never zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from harness.telemetry.nvml_seam import NvmlError, NvmlSeam, PynvmlSeam

FIELDS = ("power_mw", "energy_mj", "utilization_pct", "memory_used_bytes", "clocks_mhz", "temperature_c")
"""Seam reads taken per device per sample."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading of one GPU; None where the device does not support the counter or the read failed."""

    t_s: float
    """Seconds since the recording started."""
    power_mw: int | None = None
    energy_mj: int | None = None
    sm_util_pct: int | None = None
    mem_util_pct: int | None = None
    memory_used_bytes: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None


@dataclass(frozen=True, slots=True)
class DeviceRecording:
    index: int
    name: str | None
    samples: tuple[GpuSample, ...]
    lost_reason: str | None = None
    """Set when the GPU vanished mid-run; the samples before that are kept."""
    unsupported: tuple[str, ...] = ()
    read_errors: int = 0


@dataclass(frozen=True, slots=True)
class TelemetryRecording:
    available: bool
    reason: str | None
    interval_s: float
    driver_version: str | None = None
    devices: tuple[DeviceRecording, ...] = ()


@dataclass(slots=True)
class _Device:
    index: int
    handle: object
    name: str | None
    samples: list[GpuSample] = field(default_factory=list)
    lost_reason: str | None = None
    unsupported: set[str] = field(default_factory=set)
    read_errors: int = 0

    def frozen(self) -> DeviceRecording:
        return DeviceRecording(index=self.index, name=self.name, samples=tuple(self.samples),
                               lost_reason=self.lost_reason, unsupported=tuple(sorted(self.unsupported)),
                               read_errors=self.read_errors)


class TelemetrySampler:
    """Samples every visible GPU from ``start()`` to ``stop()``; ``recording`` holds the result afterwards."""

    def __init__(self, seam: NvmlSeam | None = None, interval_s: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self._seam: NvmlSeam = seam if seam is not None else PynvmlSeam()
        self.interval_s = interval_s
        self._clock = clock
        self._t0 = 0.0
        self._devices: list[_Device] = []
        self._driver: str | None = None
        self._unavailable: str | None = None
        self._started = False
        self._initialized = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.recording: TelemetryRecording | None = None

    def start(self) -> None:
        """Open NVML and every device, take the first sample, start the thread; never raises for NVML faults."""
        self._started = True
        try:
            self._seam.init()
            self._initialized = True
            self._driver = self._seam.driver_version()
            count = self._seam.device_count()
        except NvmlError as exc:
            self._unavailable = f"NVML not available: {exc}"
            return
        for index in range(count):
            self._devices.append(self._open(index))
        if not self._devices:
            self._unavailable = "NVML found no GPU"
            return
        self._t0 = self._clock()
        self._sample_all()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()

    def _open(self, index: int) -> _Device:
        try:
            handle = self._seam.handle(index)
        except NvmlError as exc:
            return _Device(index=index, handle=None, name=None, lost_reason=f"GPU {index} could not be opened: {exc}")
        try:
            name: str | None = self._seam.name(handle)
        except NvmlError:
            name = None  # the name is a label; its absence costs no measurement
        return _Device(index=index, handle=handle, name=name)

    def stop(self) -> TelemetryRecording:
        """Stop the thread, take the last sample, close NVML; the recording is also kept in ``recording``."""
        if self.recording is not None:
            return self.recording
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample_all()
        if self._initialized:
            # A lost GPU can make shutdown fail; the samples are already ours.
            with contextlib.suppress(NvmlError):
                self._seam.shutdown()
        reason = self._unavailable if self._started else "the sampler was never started"
        self.recording = TelemetryRecording(
            available=reason is None, reason=reason, interval_s=self.interval_s,
            driver_version=self._driver, devices=tuple(d.frozen() for d in self._devices))
        return self.recording

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample_all()

    def _sample_all(self) -> None:
        t = self._clock() - self._t0
        for device in self._devices:
            if device.lost_reason is None:
                self._sample(device, t)

    def _sample(self, device: _Device, t: float) -> None:
        values: dict[str, object] = {}
        for name in FIELDS:
            if name in device.unsupported:
                continue
            try:
                values[name] = getattr(self._seam, name)(device.handle)
            except NvmlError as exc:
                if exc.kind in ("lost", "unavailable"):
                    device.lost_reason = f"GPU {device.index} lost at {t:.2f} s: {exc}"
                    return  # a half-read sample of a vanishing GPU is not kept
                if exc.kind == "not_supported":
                    device.unsupported.add(name)
                else:
                    device.read_errors += 1
        util = values.get("utilization_pct")
        clocks = values.get("clocks_mhz")
        sm_util, mem_util = util if isinstance(util, tuple) else (None, None)
        sm_clock, mem_clock = clocks if isinstance(clocks, tuple) else (None, None)
        device.samples.append(GpuSample(
            t_s=t, power_mw=_int(values.get("power_mw")), energy_mj=_int(values.get("energy_mj")),
            sm_util_pct=_int(sm_util), mem_util_pct=_int(mem_util),
            memory_used_bytes=_int(values.get("memory_used_bytes")), sm_clock_mhz=_int(sm_clock),
            mem_clock_mhz=_int(mem_clock), temperature_c=_int(values.get("temperature_c"))))

    def __enter__(self) -> TelemetrySampler:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> TelemetrySampler:
        self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        # Joining the thread waits up to one interval: off the event loop.
        await asyncio.to_thread(self.stop)


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
