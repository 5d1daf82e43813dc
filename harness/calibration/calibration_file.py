"""``calibration.json``: the machine-speed probes of one run, between its rounds of launches, and what they say.

Probe ``p`` runs before round ``p`` (and probe ``rounds`` after the last one), while no server holds the cores. A
launch of round ``r`` ran at the speed of the probes on either side of it (``round_seconds``; every round's:
``launch_seconds``). Two runs' speeds compare as the inverse ratio of their probe seconds, with the probes' own interval
(``harness.verdict.gate.MachineSpeed``): 0.71 means the machine took 1 / 0.71 as long for the same work.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.calibration.probe import ProbeResult
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside


class Calibration(BaseModel):
    """Probe position -> its result; position ``p`` ran just before round ``p``."""

    model_config = ConfigDict(extra="forbid")

    probes: dict[int, ProbeResult] = {}

    def round_seconds(self, round_: int) -> float | None:
        """The machine's probe seconds around round ``round_``: the mean of the probes before and after it."""
        around = [self.probes[p].seconds for p in (round_, round_ + 1) if p in self.probes]
        return sum(around) / len(around) if around else None

    @property
    def launch_seconds(self) -> list[float]:
        """The machine's probe seconds around each round of launches that has a probe on either side."""
        rounds = range(max(self.probes, default=0))
        return [s for r in rounds if (s := self.round_seconds(r)) is not None]

    def with_probe(self, position: int, result: ProbeResult) -> Calibration:
        return Calibration(probes={**self.probes, position: result})


def read_calibration(path: Path) -> Calibration:
    """The stored probes; an empty calibration when the run has none (or one of another version, or a damaged one:
    set aside, so the run counts as unprobed)."""
    return load_or_set_aside(path, Calibration.model_validate_json) or Calibration()


def write_calibration(calibration: Calibration, path: Path) -> None:
    write_atomic(path, calibration.model_dump_json(indent=2))
