"""A telemetry recording → ``runs/<cell_id>/telemetry.json``: power, energy, energy per token, tok/s per MW.

Every figure is measured or absent (null), never estimated: with no NVML the summary says ``available: false``
and why. Energy comes from NVML's energy counter (mJ since driver load; the delta between the first and last
sample) where the device has one; otherwise from power samples integrated over time (trapezoids), and
``energy_source`` says which. The power is the GPU board's as NVML reports it, not all-in (no host CPU,
network or cooling). ``power_w_per_device_mean`` is what ``harness.analysis.cost`` reads for tok/s/MW.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.store import write_atomic
from harness.stored_files import load_or_set_aside
from harness.telemetry.sampler import DeviceRecording, GpuSample, TelemetryRecording

EnergySource = Literal["counter", "integrated_power", "mixed"]
DeviceStatus = Literal["ok", "lost", "no_samples"]
POWER_SCOPE = "GPU board power as reported by NVML (not all-in: no host CPU, network or cooling)"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeviceTelemetry(_Frozen):
    index: int
    name: str | None
    status: DeviceStatus
    lost_reason: str | None = None
    samples: int
    duration_s: float | None
    power_w_mean: float | None
    power_w_max: float | None
    energy_j: float | None
    energy_source: Literal["counter", "integrated_power"] | None
    sm_util_pct_mean: float | None
    mem_util_pct_mean: float | None
    memory_used_mib_peak: float | None
    sm_clock_mhz_mean: float | None
    mem_clock_mhz_mean: float | None
    temperature_c_max: float | None
    unsupported: tuple[str, ...] = Field((), description="counters this device does not have")


class TelemetrySummary(_Frozen):
    """Per GPU and overall, for one cell."""

    available: bool
    reason: str | None = Field(None, description="why telemetry is not available, or which GPUs were lost")
    power_scope: str = POWER_SCOPE
    interval_s: float | None = None
    driver_version: str | None = None
    device_count: int = 0
    duration_s: float | None = None
    power_w_per_device_mean: float | None = Field(None, description="mean over GPUs of each GPU's mean power")
    power_w_total_mean: float | None = None
    power_w_max: float | None = Field(None, description="highest single-GPU sample")
    energy_j_total: float | None = None
    energy_source: EnergySource | None = None
    output_tokens: int | None = None
    energy_j_per_output_token: float | None = None
    output_tok_s: float | None = None
    tok_s_per_mw: float | None = Field(None, description="output tok/s per MW of measured GPU power")
    devices: tuple[DeviceTelemetry, ...] = ()


def _values(samples: Sequence[GpuSample], name: str) -> list[float]:
    return [float(v) for s in samples if (v := getattr(s, name)) is not None]


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def _energy(samples: Sequence[GpuSample]) -> tuple[float | None, Literal["counter", "integrated_power"] | None]:
    counter = [(s.t_s, s.energy_mj) for s in samples if s.energy_mj is not None]
    if len(counter) >= 2 and counter[-1][1] >= counter[0][1]:
        return (counter[-1][1] - counter[0][1]) / 1e3, "counter"
    power = [(s.t_s, s.power_mw / 1e3) for s in samples if s.power_mw is not None]
    if len(power) < 2:
        return None, None
    joules = sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(power, power[1:], strict=False))
    return joules, "integrated_power"


def summarize_device(device: DeviceRecording) -> DeviceTelemetry:
    samples = device.samples
    power = [w / 1e3 for w in _values(samples, "power_mw")]
    memory = _values(samples, "memory_used_bytes")
    temperature = _values(samples, "temperature_c")
    energy_j, source = _energy(samples)
    status: DeviceStatus = "lost" if device.lost_reason else "ok" if samples else "no_samples"
    return DeviceTelemetry(
        index=device.index, name=device.name, status=status, lost_reason=device.lost_reason, samples=len(samples),
        duration_s=samples[-1].t_s - samples[0].t_s if samples else None,
        power_w_mean=_mean(power), power_w_max=max(power, default=None), energy_j=energy_j, energy_source=source,
        sm_util_pct_mean=_mean(_values(samples, "sm_util_pct")),
        mem_util_pct_mean=_mean(_values(samples, "mem_util_pct")),
        memory_used_mib_peak=max(memory) / 2**20 if memory else None,
        sm_clock_mhz_mean=_mean(_values(samples, "sm_clock_mhz")),
        mem_clock_mhz_mean=_mean(_values(samples, "mem_clock_mhz")),
        temperature_c_max=max(temperature, default=None), unsupported=device.unsupported)


def _total_energy(devices: Sequence[DeviceTelemetry]) -> tuple[float | None, EnergySource | None]:
    # A total over some GPUs only (or over part of the window, for a lost GPU) would understate: all or nothing.
    parts = [(d.energy_j, d.energy_source) for d in devices]
    if not parts or any(joules is None or source is None for joules, source in parts):
        return None, None
    sources = {source for _, source in parts if source is not None}
    total = sum(joules for joules, _ in parts if joules is not None)
    return total, "mixed" if len(sources) > 1 else sources.pop()


def summarize_recording(recording: TelemetryRecording, output_tokens: int | None = None,
                        output_tok_s: float | None = None) -> TelemetrySummary:
    """Per-GPU and overall figures; ``output_tokens`` / ``output_tok_s`` are the cell's, over the same window."""
    if not recording.available:
        return not_available(recording.reason or "not available", output_tokens, output_tok_s)
    devices = tuple(summarize_device(d) for d in recording.devices)
    means = [d.power_w_mean for d in devices if d.power_w_mean is not None]
    total_power = sum(means) if means else None
    lost = [d.lost_reason for d in devices if d.lost_reason]
    energy_total, energy_source = _total_energy(devices) if not lost else (None, None)
    durations = [d.duration_s for d in devices if d.duration_s is not None]
    return TelemetrySummary(
        available=bool(means), reason="; ".join(lost) if lost else None if means else "no power samples",
        interval_s=recording.interval_s, driver_version=recording.driver_version, device_count=len(devices),
        duration_s=max(durations, default=None),
        power_w_per_device_mean=fmean(means) if means else None, power_w_total_mean=total_power,
        power_w_max=max((d.power_w_max for d in devices if d.power_w_max is not None), default=None),
        energy_j_total=energy_total, energy_source=energy_source, output_tokens=output_tokens,
        energy_j_per_output_token=energy_total / output_tokens if energy_total is not None and output_tokens else None,
        output_tok_s=output_tok_s,
        tok_s_per_mw=output_tok_s / total_power * 1e6 if output_tok_s is not None and total_power else None,
        devices=devices)


def not_available(reason: str, output_tokens: int | None = None, output_tok_s: float | None = None,
                  ) -> TelemetrySummary:
    """The summary of a cell without telemetry (no GPU, no NVML): the reason, and no numbers."""
    return TelemetrySummary(available=False, reason=reason, output_tokens=output_tokens, output_tok_s=output_tok_s)


def write_telemetry(summary: TelemetrySummary, path: Path) -> Path:
    """The cell's ``telemetry.json`` (``Store.telemetry_path``), atomically."""
    write_atomic(path, summary.model_dump_json(indent=2))
    return path


def read_telemetry(path: Path) -> TelemetrySummary | None:
    """A cell's telemetry as written by ``write_telemetry``; None where the cell has none."""
    return load_or_set_aside(path, TelemetrySummary.model_validate_json)
