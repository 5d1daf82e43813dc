"""Rounds run in a balanced random order, and a side's stored results read back by cell label."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.regress import balanced_orders
from harness.regress.rounds import read_round
from harness.result_records import CellResult
from harness.store import now_iso

from tests.support.stored_cells import summary


@pytest.mark.parametrize("seed", range(20))
def test_every_pair_of_rounds_runs_each_side_first_once(seed: int) -> None:
    orders = balanced_orders(seed, 9)
    assert len(orders) == 9
    for first, second in zip(orders[0::2], orders[1::2], strict=False):
        assert {first, second} == {("reference", "candidate"), ("candidate", "reference")}
    firsts = [order[0] for order in orders]
    assert abs(firsts.count("reference") - firsts.count("candidate")) <= 1


def test_the_order_is_drawn_from_the_seed() -> None:
    assert balanced_orders(4, 10) == balanced_orders(4, 10)
    assert len({balanced_orders(seed, 10) for seed in range(10)}) > 1
    assert balanced_orders(4, 10)[:6] == balanced_orders(4, 6)  # a longer check replays a shorter one's rounds


def _write(path: Path, label: str, text: str | None = None) -> None:
    path.mkdir(parents=True)
    result = CellResult(cell_id="abc", label=label, server_id="s", status="ok", started_at=now_iso(),
                        finished_at=now_iso(), summary=summary(100.0, 5.0))
    (path / "summary.json").write_text(text if text is not None else result.model_dump_json())


def test_a_round_reads_by_label_whatever_the_cell_ids(tmp_path: Path) -> None:
    _write(tmp_path / "m" / "runs" / "id1", "model/vllm/c1")
    _write(tmp_path / "m" / "runs" / "other-id", "model/vllm/c4")
    found = read_round(tmp_path)
    assert sorted(found) == ["model/vllm/c1", "model/vllm/c4"]
    assert found["model/vllm/c1"].summary is not None
    assert read_round(tmp_path / "absent") == {}


def test_a_result_of_another_format_is_an_error_naming_the_file(tmp_path: Path) -> None:
    _write(tmp_path / "m" / "runs" / "id1", "x", text='{"label": "x", "unknown": 1}')
    with pytest.raises(HarnessError, match="summary.json does not read"):
        read_round(tmp_path)
