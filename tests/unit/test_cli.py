"""The CLI's contract: `plan` launches nothing, bad input exits 2 with the file, key and fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

from tests.support.matrices import BASE_MATRIX

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.mark.usefixtures("host")  # an AVX2-only CPU skips the fp8-KV server (vllm-cpu-kv-fp8-isa)
def test_plan_default_matrix() -> None:
    result = runner.invoke(app, ["plan", str(REPO / "matrices" / "default.yaml")])
    assert result.exit_code == 0, result.output
    assert "matrix default: 21 cells on 8 server configurations" in result.output  # the fp8-KV server: AVX-512
    assert "agent c=4  (8 sessions of 3-5 turns" in result.output
    assert "tiny-qwen3-recall/vllm/int8/tp1/off" in result.output
    assert "-m sglang_cpu.launch_server" in result.output  # SGLang's argv as launched
    assert "SLO claims on its 460 requests or more: TTFT p99 and TPOT p99 need 459 requests" in result.output
    assert "nothing was launched" in result.output


def test_bad_matrix_exits_2_before_launching(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    path = write_matrix(BASE_MATRIX + "  concurrency_typo: [1]\n")
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"error: {path}: axes.concurrency_typo: unknown key" in result.output
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_adapter_rejects_before_launching(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    path = write_matrix(BASE_MATRIX + "  parallel: [{tp: 1, dp: 2}]\n")
    result = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "data parallelism on the CPU build is not measured here" in result.output
    assert not (tmp_path / "out").exists()


def test_plan_says_how_each_cell_is_paced(write_matrix: Callable[..., Path]) -> None:
    text = BASE_MATRIX + "  request_rate: [4]\nrepeats: 3\nload: {burstiness: 0.5, ramp_up_s: 10}\n"
    result = runner.invoke(app, ["plan", str(write_matrix(text))])
    assert result.exit_code == 0, result.output
    assert "(4 requests + 1 warm-up, 4 req/s gamma burstiness 0.5, ramp 10 s, x3 repeats)" in result.output
