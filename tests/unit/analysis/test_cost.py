"""The cost model: the capstone lecture's worked example, the 2026 table, overrides, CPU priced as a CPU machine,
the what-if."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis.cost import (
    DEFAULT_TABLE,
    LECTURE_EXAMPLE,
    load_price_table,
    measured_watts,
    price_cell,
    price_cells,
    replica_price,
    replica_usd_per_hour_for,
    solve_what_if,
    tok_s_for,
    usd_per_mtok,
)
from harness.cli import app
from harness.config import load_matrix
from harness.errors import ConfigError
from harness.plan import expand
from harness.store import Store
from harness.telemetry import TelemetrySummary, read_telemetry, write_telemetry

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_ok, summary

GPU_MATRIX = BASE_MATRIX + "hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}\n"


def test_lecture_worked_example() -> None:
    # 16 x B200 at $5.50/GPU-hour = $88/hour; the lecture rounds it to $90 before dividing and prints ~$1.92.
    assert usd_per_mtok(16 * 5.50, 13_000) == pytest.approx(1.880, abs=5e-4)
    assert usd_per_mtok(90.0, 13_000) == pytest.approx(LECTURE_EXAMPLE.lecture_usd_per_mtok, abs=5e-3)
    assert LECTURE_EXAMPLE.usd_per_mtok == pytest.approx(1.880, abs=5e-4)
    # The lecture's self-check 3: EP=64 NVL72 at $5.50/GPU-hour and 20,000 tok/s per replica.
    assert usd_per_mtok(64 * 5.50, 20_000) == pytest.approx(4.889, abs=1e-3)


def test_reverse_directions_round_trip() -> None:
    assert tok_s_for(88.0, usd_per_mtok(88.0, 13_000)) == pytest.approx(13_000)
    assert replica_usd_per_hour_for(13_000, usd_per_mtok(88.0, 13_000)) == pytest.approx(88.0)
    solved = solve_what_if(None, 13_000, 1.92)
    assert solved.solved == "replica_usd_per_hour" and solved.replica_usd_per_hour == pytest.approx(89.856)
    with pytest.raises(ValueError, match="exactly two"):
        solve_what_if(88.0, None, None)
    with pytest.raises(ValueError):
        usd_per_mtok(88.0, 0)


def test_table_holds_the_lectures_2026_rates() -> None:
    assert {k: v.usd_per_hour for k, v in DEFAULT_TABLE.items() if v.unit == "GPU"} == {
        "H100": 2.50, "H200": 3.50, "B200": 5.50, "B300": 7.00, "GB200": 5.50}
    # all-in watts implied by the InferenceX pages: tok/s/GPU / tok/s/MW
    assert DEFAULT_TABLE["B200"].watts_all_in == pytest.approx(5160.2 / 2_377_969 * 1e6, rel=1e-3)
    assert DEFAULT_TABLE["GB200"].watts_all_in == pytest.approx(9478.9 / 4_513_744 * 1e6, rel=1e-3)
    assert DEFAULT_TABLE["H100"].watts_all_in is None  # no source: nothing invented


def test_cpu_is_priced_as_a_cpu_machine(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX))
    price = replica_price(matrix, DEFAULT_TABLE)
    assert (price.device, price.unit, price.devices) == ("cpu", "CPU machine", 1)
    assert "assumption" in price.source
    cost = price_cell(summary(100.0, 20.0), price)
    assert cost.tok_s_per_device == 100.0 and cost.tok_s_per_mw is None and cost.power_source == "not available"
    assert cost.usd_per_mtok_output == pytest.approx(usd_per_mtok(DEFAULT_TABLE["cpu"].usd_per_hour, 100.0))


def test_gpu_cell_cost_and_power(write_matrix: Callable[..., Path]) -> None:
    price = replica_price(load_matrix(write_matrix(GPU_MATRIX)), DEFAULT_TABLE)
    assert price.usd_per_hour == pytest.approx(88.0) and price.unit == "GPU"
    cost = price_cell(summary(13_000.0, 20.0), price)
    assert cost.usd_per_mtok_output == pytest.approx(1.880, abs=5e-4)
    total, output = cost.usd_per_mtok_total, cost.usd_per_mtok_output
    assert total is not None and output is not None and total < output  # input tokens count in the total
    assert cost.tok_s_per_device == pytest.approx(812.5)
    assert cost.tok_s_per_mw == pytest.approx(812.5 / 2170 * 1e6)
    measured = price_cell(summary(13_000.0, 20.0), price, watts=1000.0)
    assert measured.power_source == "measured (NVML)" and measured.tok_s_per_mw == pytest.approx(812_500)


def test_matrix_and_file_overrides(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("b200: {usd_per_hour: 4.0, watts_all_in: 1800, source: our contract}\n")
    matrix = load_matrix(write_matrix(GPU_MATRIX + "cost: {file: prices.yaml}\n"))
    table = load_price_table(matrix.cost, tmp_path)
    assert "B200" not in table and table["b200"].usd_per_hour == 4.0  # matched case-insensitively, replaced
    price = replica_price(matrix, table)
    assert price.usd_per_device_hour == 4.0 and price.watts_per_device == 1800 and price.source == "our contract"
    matrix = load_matrix(write_matrix(GPU_MATRIX + "cost: {usd_per_hour: 6.0, source: spot quote}\n"))
    price = replica_price(matrix, DEFAULT_TABLE)
    assert price.usd_per_device_hour == 6.0 and price.watts_per_device == 2170
    assert price.source.startswith("matrix cost section: spot quote")


def test_bad_price_file_is_a_config_error(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("B200: {usd_per_hour: -1, source: x}\n")
    matrix = load_matrix(write_matrix(GPU_MATRIX + "cost: {file: prices.yaml}\n"))
    with pytest.raises(ConfigError, match="not a price table"):
        load_price_table(matrix.cost, tmp_path)
    matrix = load_matrix(write_matrix(GPU_MATRIX + "cost: {file: missing.yaml}\n"))
    with pytest.raises(ConfigError, match="no such price table"):
        load_price_table(matrix.cost, tmp_path)


def test_unknown_gpu_is_unpriced_not_guessed(write_matrix: Callable[..., Path]) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX + "hardware: {kind: gpu, gpu: MI355X}\n"))
    price = replica_price(matrix, DEFAULT_TABLE)
    assert price.usd_per_hour is None and "set cost.usd_per_hour" in price.source
    assert price_cell(summary(100.0, 20.0), price).usd_per_mtok_output is None


def test_price_cells_reads_telemetry(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(GPU_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    first, second = plan.cells
    store_ok(store, first, summary(1600.0, 20.0))
    measured = TelemetrySummary(available=True, reason=None, power_w_per_device_mean=1500.0)
    write_telemetry(measured, store.telemetry_path(first))
    assert measured_watts(read_telemetry(store.telemetry_path(first))) == 1500.0
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    assert rows[0].cost is not None and rows[0].cost.measured_watts == 1500.0
    assert rows[1].cost is None and rows[1].status == "not run"


def test_cost_command_reproduces_the_lecture() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["cost", "--gpus", "16", "--usd-per-gpu-hour", "5.50", "--tok-s", "13000"])
    assert result.exit_code == 0, result.output
    assert "$88.00/hour" in result.output and "$/MTok:     $1.880   <- solved" in result.output
    result = runner.invoke(app, ["cost", "--gpus", "16", "--gpu", "B200", "--usd-per-mtok", "1.92"])
    assert result.exit_code == 0 and "12,731 tok/s" in result.output
    result = runner.invoke(app, ["cost", "--tok-s", "13000"])
    assert result.exit_code == 2 and "exactly two" in result.output
    assert runner.invoke(app, ["cost", "--gpu", "TPU", "--tok-s", "1"]).exit_code == 2
