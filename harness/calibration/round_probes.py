"""The calibration stage's one entry: a run's machine-speed probes, before every round of launches and after the
last, each kept in the run's ``calibration.json`` as it lands (an interrupted run keeps the probes it took)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from harness.calibration.calibration_file import Calibration, read_calibration, write_calibration
from harness.calibration.probe import probe

log = logging.getLogger(__name__)


class RoundProbes:
    """The probes of one run, stored at ``path``. ``active`` is False when no launched engine's speed is this
    machine's (a cluster's servers, a GPU's), and the probes are then skipped. A forced run starts a new file; a
    resumed one adds to the probes it already has."""

    def __init__(self, path: Path, *, active: bool, force: bool = False) -> None:
        self.path = path
        self.active = active
        self.calibration = Calibration() if force else read_calibration(path)
        self._last: int | None = None

    async def probe(self, position: int, at: str) -> None:
        """Probe ``position`` (just before round ``position``), taken at ``at`` while no server holds the cores. The
        probe after a round is the one before the next: asked for the position it took last, it takes none (nothing
        ran in between; a second probe cost each round boundary of `harness regress` 16 s on 2 cores)."""
        if not self.active or position == self._last:
            return
        self._last = position
        result = await asyncio.to_thread(probe, at)
        log.info("machine-speed probe %d: %.4f s", position, result.seconds)
        self.calibration = self.calibration.with_probe(position, result)
        write_calibration(self.calibration, self.path)
