"""The telemetry stage, around every cell's load: on GPU hardware NVML is sampled in the background and summarised
after it (on a CPU the cell's ``telemetry.json`` records that there is none: nothing is estimated in place of a
measurement); with ``telemetry.expert_load`` the engine's expert-load collector starts from zero when the cell's
measured load begins and is read when the cell ends (``expert_load.json``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from harness.config.hardware import GpuHardware
from harness.load import RequestRecord
from harness.metrics.cell_summary import CellSummary
from harness.plan.cells import Cell
from harness.servers import Runtime
from harness.store import Store
from harness.telemetry.expert_load_watch import ExpertLoadWatch, expert_load_watch
from harness.telemetry.power_summary import not_available, summarize_recording, write_telemetry
from harness.telemetry.sampler import TelemetrySampler


@dataclasses.dataclass(slots=True)
class CellOutput:
    """What the stage needs from the cell while and after it runs: the moment its measured load starts, then its
    summary (None if it failed), its measured requests and their wall time."""

    summary: CellSummary | None = None
    records: Sequence[RequestRecord] = ()
    measured_s: float = 0.0
    experts: ExpertLoadWatch | None = None

    async def measure_started(self) -> None:
        """The cell's measured load begins (its warm-up is done): the engine's expert counts start from zero."""
        if self.experts is not None:
            await self.experts.start()

    @property
    def tokens(self) -> tuple[int | None, float | None]:
        s = self.summary
        return (s.total_output_tokens, s.output_throughput) if s is not None else (None, None)


@asynccontextmanager
async def telemetry(cell: Cell, store: Store, *, runtime: Runtime | None = None, base_urls: Sequence[str] = (),
                    launch: int | None = None) -> AsyncIterator[CellOutput]:
    """Sample the GPUs while the block runs and write the cell's ``telemetry.json`` after it; on a CPU, record
    that there is no GPU. With the engine's ``runtime`` and its servers' ``base_urls``, count its expert load too,
    stored as launch ``launch``. The block sets the yielded output's fields."""
    watch = expert_load_watch(cell.server, runtime, base_urls) if runtime is not None else None
    output = CellOutput(experts=watch)
    if not isinstance(cell.server.hardware, GpuHardware):
        yield output
        write_telemetry(not_available("CPU hardware: no GPU to sample (NVML)", *output.tokens),
                        store.telemetry_path(cell))
    else:
        sampler = TelemetrySampler()
        sampler.start()
        try:
            yield output
        finally:
            recording = sampler.stop()
        write_telemetry(summarize_recording(recording, *output.tokens), store.telemetry_path(cell))
    if watch is not None and output.summary is not None:
        await watch.finish(cell.label, output.records, output.measured_s, store.expert_load_path(cell, launch))
