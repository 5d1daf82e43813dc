"""The telemetry stage: on GPU hardware NVML is sampled in the background while each cell's load runs; on a CPU
the cell's ``telemetry.json`` records that there is none. Nothing is estimated in place of a measurement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from harness.config.matrix import GpuHardware
from harness.metrics.summary import CellSummary
from harness.plan.cells import Cell
from harness.store import Store
from harness.telemetry.sampler import TelemetrySampler
from harness.telemetry.summary import not_available, summarize_recording, write_telemetry


@dataclasses.dataclass(slots=True)
class CellOutput:
    """What the telemetry needs from the cell once it has run: its output tokens and tok/s (None if failed)."""

    summary: CellSummary | None = None

    @property
    def tokens(self) -> tuple[int | None, float | None]:
        s = self.summary
        return (s.total_output_tokens, s.output_throughput) if s is not None else (None, None)


@contextmanager
def telemetry(cell: Cell, store: Store) -> Iterator[CellOutput]:
    """Sample the GPUs while the block runs and write the cell's ``telemetry.json`` after it; on a CPU, record
    that there is no GPU. The block sets the yielded ``summary`` so that energy can be put per output token."""
    output = CellOutput()
    if not isinstance(cell.server.hardware, GpuHardware):
        yield output
        none = not_available("CPU hardware: no GPU to sample (NVML)", *output.tokens)
        write_telemetry(none, store.telemetry_path(cell))
        return
    sampler = TelemetrySampler()
    sampler.start()
    try:
        yield output
    finally:
        recording = sampler.stop()
    write_telemetry(summarize_recording(recording, *output.tokens), store.telemetry_path(cell))
