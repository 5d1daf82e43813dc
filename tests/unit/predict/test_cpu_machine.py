"""What the CPU step model reads of its machine: the engine's threads per rank, and kernel timings kept only for the
machine and torch build that measured them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.predict.cpu_machine import engine_threads, host_key, load_kernels, save_kernels


@pytest.mark.parametrize(("cores", "ranks", "threads"), [(1, 1, 1), (2, 1, 1), (8, 1, 7), (2, 2, 1), (8, 2, 4)])
def test_one_rank_keeps_a_core_for_its_scheduler_and_ranks_share_the_rest(monkeypatch: pytest.MonkeyPatch,
                                                                          cores: int, ranks: int,
                                                                          threads: int) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert engine_threads(ranks) == threads


def test_timings_from_another_machine_are_not_used(tmp_path: Path) -> None:
    path = tmp_path / "kernels.json"
    save_kernels(path, {"64x64@1/4t/1": 1e-5})
    assert load_kernels(path) == {"64x64@1/4t/1": 1e-5}
    path.write_text(json.dumps({"host": "another machine / torch 0", "kernels": {"64x64@1/4t/1": 1e-5}}))
    assert load_kernels(path) == {}
    path.write_text("{not json")
    assert load_kernels(path) == {} and load_kernels(None) == {}
    assert "torch" in host_key()
