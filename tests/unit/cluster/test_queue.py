"""Reading the queue and the partitions: sinfo's GRES field, and a clear error where Slurm is missing."""

from __future__ import annotations

import pytest

from harness.cluster.queue import _gpus, require_commands
from harness.errors import ConfigError


@pytest.mark.parametrize(("gres", "gpus"), [("gpu:4", 4), ("gpu:h100:8(S:0-1)", 8), ("(null)", 0),
                                            ("gpu:a100:2,gpu:h100:2", 4), ("shard:8", 0)])
def test_gpus_from_sinfo_gres(gres: str, gpus: int) -> None:
    assert _gpus(gres) == gpus


def test_missing_slurm_commands_fail_before_submission(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError, match="slurm commands not found") as err:
        require_commands("m.yaml")
    assert "m.yaml" in str(err.value) and "executor.kind" in str(err.value)
