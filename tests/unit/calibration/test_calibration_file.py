"""calibration.json: probes between rounds, the speed around each round, the run's speed and the ratio."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.calibration import Calibration, ProbeResult, read_calibration, write_calibration


def _probe(seconds: float) -> ProbeResult:
    return ProbeResult(at="t", python_s=seconds, torch_s=seconds)


def test_round_speed_is_the_mean_of_the_probes_around_it(tmp_path: Path) -> None:
    calibration = Calibration().with_probe(0, _probe(0.2)).with_probe(1, _probe(0.3)).with_probe(2, _probe(0.4))
    assert calibration.round_seconds(0) == pytest.approx(0.25) and calibration.round_seconds(1) == pytest.approx(0.35)
    assert calibration.round_seconds(2) == pytest.approx(0.4) and calibration.round_seconds(5) is None
    assert calibration.launch_seconds == pytest.approx([0.25, 0.35])
    write_calibration(calibration, tmp_path / "calibration.json")
    assert read_calibration(tmp_path / "calibration.json") == calibration


def test_absent_or_foreign_file_is_an_empty_calibration(tmp_path: Path) -> None:
    assert read_calibration(tmp_path / "absent.json").launch_seconds == []
    (tmp_path / "bad.json").write_text('{"probes": "x"}')
    assert read_calibration(tmp_path / "bad.json") == Calibration()
