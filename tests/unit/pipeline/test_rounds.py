"""The rounds' machine-speed probes: taken around a local engine whose speed is this machine's, and not where the
matrix turns them off, the servers run elsewhere, or the engine only sleeps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.pipeline.rounds import _round_probes
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX


@pytest.mark.parametrize(("extra", "local", "active"), [
    ("", True, True),
    ("gates: {machine_speed: adjust}\n", True, True),
    ("gates: {machine_speed: none}\n", True, False),
    ("", False, False),  # a cluster's servers run on other machines than the probe
    ("axes: {runtime: [fake], concurrency: [1]}\n", True, False),  # the fake server sleeps
])
def test_probes_run_only_for_a_local_machine_bound_engine_unless_turned_off(
        write_matrix: Callable[[str], Path], tmp_path: Path, extra: str, local: bool, active: bool) -> None:
    text = BASE_MATRIX.replace("axes:\n  concurrency: [1, 2]\n", "") if extra.startswith("axes") else BASE_MATRIX
    plan = expand(load_matrix(write_matrix(text + extra)))
    probes = _round_probes(plan, Store(tmp_path / "reports", plan.matrix.name), force=False, local=local)
    assert probes.active is active
