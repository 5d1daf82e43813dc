"""``harness predict``: a GPU matrix answered by its predictor, rendered as a report labelled PREDICTED throughout,
with nothing launched; and a matrix nothing can predict is an error, not an empty report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

REPO = Path(__file__).resolve().parents[3]


def test_predict_renders_the_predicted_capstone(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["predict", str(REPO / "matrices" / "deepseek-v31-nvl72.yaml"),
                                      "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "nothing was launched" in result.output
    report = (tmp_path / "deepseek-v31-nvl72" / "predicted.md").read_text()
    assert report.startswith("# PREDICTED capstone") and "**Nothing in this report was measured.**" in report
    assert "aiconfigurator 0.12.0" in report and "## What the predictions assume" in report
    ship = report.split("## The ship recipe, PREDICTED")[1].split("##")[0]
    assert "deepseek-v31/sglang/" in ship and "$" in ship  # a recipe with its $/MTok
    assert "FP4 vs FP8" in report and "lecture's claim" in report
    # the P/D workers are predicted on a stated substitute MoE layout, which the EP lever then leaves out
    assert "Cross-node EP requires" not in report and "P/D workers' MoE modelled as EP 4 x MoE TP 4" in report
    assert (tmp_path / "deepseek-v31-nvl72" / "predicted.json").is_file()
    assert not (tmp_path / "deepseek-v31-nvl72" / "runs").exists()  # nothing measured, nothing stored as such


def test_a_matrix_nothing_can_predict_is_an_error(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    path = write_matrix("""
        name: none
        hardware: {kind: gpu, gpu: MI300X, gpus_per_replica: 8}
        models:
          m: {id: org/unknown-model}
        workloads:
          w: {kind: random, input_tokens: 100, output_tokens: 50}
    """)
    result = CliRunner().invoke(app, ["predict", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "no cell could be predicted" in result.output


def test_fixtures_for_a_matrix_builds_only_what_its_servers_load(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.cli.measure as measure

    asked: list[set[str]] = []
    monkeypatch.setattr(measure, "build_fixtures", lambda names=None: asked.append(set(names or ())) or {})
    result = CliRunner().invoke(app, ["fixtures", str(REPO / "matrices" / "default.yaml")])
    assert result.exit_code == 0, result.output
    assert asked == [{"tiny-qwen3-moe", "tiny-qwen3-recall", "tiny-qwen3-recall-w8a8"}]


def test_fixtures_sigtermed_mid_build_unwinds_and_restores_the_handler(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI trains in its own process, so SIGTERM (a CI timeout, `kill`) must unwind the build as Ctrl-C does,
    # through the build's cleanup of its temporary directory (build_all's finally), and leave the caller's handler.
    import os
    import signal
    import time

    import harness.cli.measure as measure

    training = tmp_path / ".tiny-qwen3-moe.tmp-x"

    def build(names: object = None) -> dict[str, Path]:
        training.mkdir()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler interrupts this; without one the test process itself would die
            return {}
        finally:
            training.rmdir()

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(measure, "build_fixtures", build)
    result = CliRunner().invoke(app, ["fixtures"])
    assert result.exit_code == 128 + signal.SIGTERM, result.output
    assert not training.exists() and signal.getsignal(signal.SIGTERM) is before
