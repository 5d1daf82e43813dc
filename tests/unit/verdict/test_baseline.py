"""The baseline: per-launch values and machine speed, promotion and adding runs, and every refusal with its fix."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.host import HardwareInfo
from harness.pipeline import load_plan
from harness.plan import Plan, expand
from harness.store import Store
from harness.verdict import Lock, build_lock
from harness.verdict.baseline import (
    BaselineFile,
    GateError,
    choose,
    promote,
    read_baseline,
    refuse,
    write_baseline,
)

from tests.support.hosts import another_machine
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, store_ok, summary

# The lock records the machine: each test runs as an AMD and as an Intel host (tests/conftest.py: host).
pytestmark = pytest.mark.usefixtures("host")


@pytest.fixture
def stored(write_matrix: Callable[..., Path], tmp_path: Path) -> tuple[Plan, Store, Lock]:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, [summary(out, 20.0) for out in (100.0, 90.0, 80.0)], (0.25, 0.26, None))
    return plan, store, build_lock(plan, store)


def test_unknown_gate_metric_is_a_config_error(write_matrix: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match="not a gateable metric"):
        load_plan(write_matrix(BASE_MATRIX + "gates: {metrics: [output_throughput, ttft_ms.p42]}\n"))


@pytest.mark.parametrize("tolerance", ["0", "1", "-0.1", "1.5"])
def test_tolerance_outside_zero_one_is_a_config_error(write_matrix: Callable[..., Path], tolerance: str) -> None:
    with pytest.raises(ConfigError, match=r"gates\.tolerance"):
        load_plan(write_matrix(BASE_MATRIX + f"gates: {{tolerance: {tolerance}}}\n"))


def test_promote_keeps_every_launch_and_its_machine_speed(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    cell = baseline.cells[plan.cells[0].cell_id]
    assert cell.values["output_throughput"] == [100.0, 90.0, 80.0] and cell.machine_s == [0.25, 0.26, None]
    assert baseline.launches == 3 and baseline.runs == 1
    store_ok(store, plan.cells[0], summary(70.0, 20.0))  # one more run of one launch, added to it
    more = promote(plan, store, lock, previous=baseline)
    assert more.cells[plan.cells[0].cell_id].values["output_throughput"] == [100.0, 90.0, 80.0, 70.0]
    assert more.cells[plan.cells[0].cell_id].machine_s == [0.25, 0.26, None, None] and more.runs == 2


def test_adding_a_run_keeps_to_the_cells_the_baseline_holds(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    first, probe = plan.cells[0], plan.cells[1]
    baseline = promote(plan, store, lock)
    without = baseline.model_copy(update={"cells": {k: c for k, c in baseline.cells.items() if k != probe.cell_id}})
    store_ok(store, probe, summary(70.0, 20.0))  # a search's probe visited anew: one launch
    more = promote(plan, store, lock, previous=without)
    assert probe.cell_id not in more.cells and more.cells[first.cell_id].launches == 6
    assert more.launches == 6  # not 1: the gate would refuse the whole baseline for the newcomer


def test_round_trip_and_read_errors(stored: tuple[Plan, Store, Lock], tmp_path: Path) -> None:
    plan, store, lock = stored
    path = write_baseline(promote(plan, store, lock), tmp_path / "lock" / "t.baseline.json")
    assert read_baseline(path).machines[0].cells.keys() == {c.cell_id for c in plan.cells}
    with pytest.raises(GateError, match=r"no baseline at .*absent\.json.*fix: .*--launches 3"):
        read_baseline(tmp_path / "absent.json")
    path.write_text('{"schema_version": 1}')
    with pytest.raises(GateError, match=r"t\.baseline\.json is not a baseline.*fix: re-promote"):
        read_baseline(path)
    with pytest.raises(GateError, match="no results"):
        promote(plan, Store(tmp_path / "empty", "t"), lock)


def test_refusals_name_the_file_and_the_fix(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    baseline = promote(plan, store, lock)
    assert refuse(baseline, "b.json", plan, lock, strict=False) == []
    with pytest.raises(GateError, match=r"b\.json is the baseline of matrix 'other', not 't'; fix: point"):
        refuse(baseline.model_copy(update={"matrix": "other"}), "b.json", plan, lock, strict=False)
    elsewhere = baseline.model_copy(update={"hardware": HardwareInfo(kind="gpu", name="NVIDIA H100", count=8)})
    assert refuse(elsewhere, "b.json", plan, lock, strict=False) == [
        f"machine: baseline gpu: NVIDIA H100 x8, now {lock.hardware.fingerprint}"]  # flagged: exact checks only
    with pytest.raises(GateError, match="cannot add this run to a baseline of another matrix or machine"):
        promote(plan, store, lock, previous=elsewhere)
    few = baseline.model_copy(update={"cells": {k: c.model_copy(update={"machine_s": [None]})
                                                for k, c in baseline.cells.items()}})
    with pytest.raises(GateError, match=r"holds 1 launch\(es\).*needs at least 3.*--add-repeat"):
        refuse(few, "b.json", plan, lock, strict=False)
    older = baseline.model_copy(update={"harness_version": "0.0.9"})
    assert refuse(older, "b.json", plan, lock, strict=False) == ["harness version: baseline 0.0.9, now 0.1.0"]
    with pytest.raises(GateError, match=r"refused \(--strict\): harness version"):
        refuse(older, "b.json", plan, lock, strict=True)


def test_one_baseline_per_machine(stored: tuple[Plan, Store, Lock], tmp_path: Path, host: HardwareInfo) -> None:
    """CI runners differ: promoting on one machine keeps the others' baselines, and the gate takes this machine's."""
    plan, store, lock = stored
    assert lock.hardware == host
    here = promote(plan, store, lock)
    other = another_machine(host)
    elsewhere = here.model_copy(update={"hardware": other, "runs": 7})
    path = tmp_path / "lock" / "t.baseline.json"
    write_baseline(elsewhere, path)
    write_baseline(here, path)
    write_baseline(here.model_copy(update={"runs": 2}), path)  # this machine's entry replaced, not added
    file = read_baseline(path)
    assert [b.hardware.name for b in file.machines] == [other.name, host.name]
    assert file.of(host.fingerprint).runs == 2 and file.of(other.fingerprint).runs == 7  # type: ignore[union-attr]
    assert choose(file, path, plan, lock, strict=False) == (file.machines[1], False)
    only_elsewhere = BaselineFile(matrix="t", machines=[elsewhere])
    assert choose(only_elsewhere, path, plan, lock, strict=False) == (elsewhere, True)  # the exact checks only
    with pytest.raises(GateError, match=rf"measured on {re.escape(other.fingerprint)}, this machine is .*fix: "
                                        r"promote a baseline here .*adds this machine beside the others"):
        choose(only_elsewhere, path, plan, lock, strict=True)
    with pytest.raises(GateError, match=r"t\.baseline\.json is the baseline of matrix 'other', not 't'"):
        choose(only_elsewhere.model_copy(update={"matrix": "other"}), path, plan, lock, strict=False)
    write_baseline(here.model_copy(update={"matrix": "other"}), path)  # another matrix's file is replaced whole
    assert [b.matrix for b in read_baseline(path).machines] == ["other"]


def test_a_one_machine_file_of_the_previous_schema_is_read(stored: tuple[Plan, Store, Lock], tmp_path: Path) -> None:
    plan, store, lock = stored
    one = promote(plan, store, lock)
    path = tmp_path / "old.baseline.json"
    path.write_text(json.dumps({"schema_version": 2, **json.loads(one.model_dump_json())}))
    assert read_baseline(path) == BaselineFile(matrix="t", machines=[one])
    path.write_text("{not json")
    with pytest.raises(GateError, match=r"old\.baseline\.json is not a baseline of this harness \(not JSON"):
        read_baseline(path)
