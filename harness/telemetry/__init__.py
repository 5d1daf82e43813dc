"""GPU telemetry during every cell on a GPU machine: NVML power, energy, utilisation, memory, clocks, temperature.

``nvml_seam`` is the only module that touches NVML (nvidia-ml-py, imported lazily: the ``gpu`` extra);
``sampler`` samples every GPU in a background thread around a cell; ``summary`` turns the recording into
``runs/<cell_id>/telemetry.json`` with energy per output token and tok/s per MW. Without a GPU or NVML the
summary is ``available: false`` with the reason, never a guess. ``expert_load`` reads the engine's own count of
the tokens each MoE layer routes to each expert over every cell's measured load (``telemetry.expert_load``).

Use::

    async with TelemetrySampler(interval_s=0.1) as sampler:
        await run_load()
    summary = summarize_recording(sampler.recording, output_tokens=n, output_tok_s=tok_s)
    write_telemetry(summary, cell_dir)
"""

from harness.telemetry.cell_telemetry import CellOutput, telemetry
from harness.telemetry.expert_load_watch import ExpertLoadRecord, ExpertLoadWatch, expert_load_watch, read_expert_load
from harness.telemetry.nvml_seam import NvmlError, NvmlSeam, PynvmlSeam
from harness.telemetry.power_summary import (
    DeviceTelemetry,
    TelemetrySummary,
    not_available,
    read_telemetry,
    summarize_recording,
    write_telemetry,
)
from harness.telemetry.sampler import DeviceRecording, GpuSample, TelemetryRecording, TelemetrySampler

__all__ = [
    "CellOutput", "DeviceRecording", "DeviceTelemetry", "expert_load_watch", "ExpertLoadRecord", "ExpertLoadWatch",
    "GpuSample", "not_available", "NvmlError", "NvmlSeam", "PynvmlSeam", "read_expert_load", "read_telemetry",
    "summarize_recording", "telemetry", "TelemetryRecording", "TelemetrySampler", "TelemetrySummary",
    "write_telemetry",
]
