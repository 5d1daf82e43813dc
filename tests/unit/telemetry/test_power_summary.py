"""Recordings → telemetry.json: measured figures or nulls, never guesses; the file harness.analysis.cost reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis import cost
from harness.telemetry import (
    DeviceRecording,
    GpuSample,
    TelemetryRecording,
    not_available,
    read_telemetry,
    summarize_recording,
    write_telemetry,
)


def device(index: int, watts: list[float], energy_mj: list[int] | None = None, dt: float = 0.5,
           lost: str | None = None) -> DeviceRecording:
    samples = tuple(GpuSample(t_s=i * dt, power_mw=int(w * 1000), energy_mj=energy_mj[i] if energy_mj else None,
                              sm_util_pct=80 + i, mem_util_pct=40, memory_used_bytes=(100 + i) * 2**30,
                              sm_clock_mhz=1900 + 10 * i, mem_clock_mhz=3201, temperature_c=60 + i)
                    for i, w in enumerate(watts))
    return DeviceRecording(index=index, name="NVIDIA H200", samples=samples, lost_reason=lost)


def recording(*devices: DeviceRecording) -> TelemetryRecording:
    return TelemetryRecording(available=True, reason=None, interval_s=0.5, driver_version="570.86.15",
                              devices=devices)


def test_energy_from_the_counter_and_per_token_figures() -> None:
    rec = recording(device(0, [600, 700, 650], [5_000_000, 5_325_000, 5_650_000]),
                    device(1, [500, 500, 500], [9_000_000, 9_250_000, 9_500_000]))
    summary = summarize_recording(rec, output_tokens=2000, output_tok_s=2000.0)
    d0 = summary.devices[0]
    assert (d0.status, d0.samples, d0.duration_s) == ("ok", 3, 1.0)
    assert d0.power_w_mean == pytest.approx(650.0) and d0.power_w_max == 700.0
    assert (d0.energy_j, d0.energy_source) == (650.0, "counter")
    assert d0.sm_util_pct_mean == 81 and d0.mem_util_pct_mean == 40
    assert d0.memory_used_mib_peak == 102 * 1024 and d0.temperature_c_max == 62
    assert d0.sm_clock_mhz_mean == 1910 and d0.mem_clock_mhz_mean == 3201
    assert summary.available and summary.reason is None and summary.device_count == 2
    assert summary.power_w_per_device_mean == pytest.approx(575.0)
    assert summary.power_w_total_mean == pytest.approx(1150.0) and summary.power_w_max == 700.0
    assert (summary.energy_j_total, summary.energy_source) == (1150.0, "counter")
    assert summary.energy_j_per_output_token == pytest.approx(0.575)
    assert summary.tok_s_per_mw == pytest.approx(2000.0 / 1150.0 * 1e6)
    assert "not all-in" in summary.power_scope


def test_without_an_energy_counter_power_is_integrated_and_labelled() -> None:
    summary = summarize_recording(recording(device(0, [100, 300, 300])))
    assert summary.energy_j_total == pytest.approx(0.5 * 200 + 0.5 * 300)
    assert summary.energy_source == "integrated_power"
    assert summary.devices[0].energy_source == "integrated_power"


def test_mixed_sources_are_said_so() -> None:
    rec = recording(device(0, [100, 100], [0, 50_000]), device(1, [100, 100]))
    assert summarize_recording(rec).energy_source == "mixed"


def test_a_counter_that_went_backwards_is_not_trusted() -> None:
    rec = recording(device(0, [200, 200], [10_000, 5_000]))
    assert summarize_recording(rec).energy_source == "integrated_power"


def test_one_sample_gives_power_but_no_energy() -> None:
    summary = summarize_recording(recording(device(0, [420])), output_tokens=10)
    assert summary.power_w_per_device_mean == 420.0
    assert summary.energy_j_total is None and summary.energy_j_per_output_token is None


def test_no_gpu_is_recorded_as_not_available_with_only_nulls(tmp_path: Path) -> None:
    rec = TelemetryRecording(available=False, reason="NVML not available: nvidia-ml-py is not installed",
                             interval_s=0.1)
    summary = summarize_recording(rec, output_tokens=512, output_tok_s=800.0)
    assert summary == not_available(rec.reason or "", 512, 800.0)
    data = json.loads(write_telemetry(summary, tmp_path / "telemetry.json").read_text())
    assert data["available"] is False and data["reason"].startswith("NVML not available")
    numbers = [k for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    assert sorted(numbers) == ["device_count", "output_tok_s", "output_tokens"]  # the cell's own, nothing invented
    assert data["power_w_per_device_mean"] is None and data["devices"] == []
    assert cost.measured_watts(read_telemetry(tmp_path / "telemetry.json")) is None
    assert cost.measured_watts(read_telemetry(tmp_path / "absent.json")) is None


def test_cost_reads_the_measured_power_from_the_file_written_here(tmp_path: Path) -> None:
    summary = summarize_recording(recording(device(0, [600, 700]), device(1, [500, 600])))
    path = write_telemetry(summary, tmp_path / "runs" / "c0ffee" / "telemetry.json")
    assert "power_w_per_device_mean" in json.loads(path.read_text())
    assert cost.measured_watts(read_telemetry(path)) == pytest.approx(600.0)


def test_devices_without_samples() -> None:
    rec = recording(DeviceRecording(index=0, name=None, samples=(), lost_reason="GPU 0 could not be opened: lost"))
    summary = summarize_recording(rec)
    assert not summary.available and summary.devices[0].status == "lost"
    assert summary.reason == "GPU 0 could not be opened: lost" and summary.power_w_per_device_mean is None
