"""The calibration stage: a run's probes kept as they land, resumed with the run, skipped when inactive."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.calibration import ProbeResult, RoundProbes, read_calibration
from harness.calibration import round_probes as calibration_stage


@pytest.fixture
def timed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The probe replaced by one that records when it ran (the real one takes seconds; test_probe times it)."""
    calls: list[str] = []

    def probe(at: str) -> ProbeResult:
        calls.append(at)
        return ProbeResult(at=at, python_s=0.1 * len(calls), torch_s=0.1 * len(calls))

    monkeypatch.setattr(calibration_stage, "probe", probe)
    return calls


def test_each_probe_is_stored_as_it_lands_and_a_resumed_run_keeps_them(timed: list[str], tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    probes = RoundProbes(path, active=True)
    asyncio.run(probes.probe(0, "t0"))
    assert read_calibration(path) == probes.calibration and list(probes.calibration.probes) == [0]
    resumed = RoundProbes(path, active=True)  # an interrupted run, started again
    asyncio.run(resumed.probe(1, "t1"))
    assert sorted(read_calibration(path).probes) == [0, 1] and resumed.calibration.round_seconds(0) is not None
    forced = RoundProbes(path, active=True, force=True)
    assert forced.calibration.probes == {}
    asyncio.run(forced.probe(0, "t2"))
    assert list(read_calibration(path).probes) == [0] and timed == ["t0", "t1", "t2"]


def test_an_inactive_stage_takes_no_probe(timed: list[str], tmp_path: Path) -> None:
    probes = RoundProbes(tmp_path / "calibration.json", active=False)
    asyncio.run(probes.probe(0, "t0"))
    assert timed == [] and not (tmp_path / "calibration.json").exists()


def test_the_probe_after_a_round_is_the_one_before_the_next(timed: list[str], tmp_path: Path) -> None:
    probes = RoundProbes(tmp_path / "calibration.json", active=True)
    for position in (0, 1, 1, 2, 2, 3):  # before round 0, after it = before round 1, ...: as pipeline.rounds asks
        asyncio.run(probes.probe(position, f"t{len(timed)}"))
    assert timed == ["t0", "t1", "t2", "t3"] and sorted(probes.calibration.probes) == [0, 1, 2, 3]
