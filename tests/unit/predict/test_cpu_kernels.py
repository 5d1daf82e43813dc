"""The checkpoint's large GEMMs: read from a real safetensors header, split into trunk and MTP module, experts
counted by their routed share, timed with torch, and extrapolated past the largest timed token count."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.predict.cpu_kernels import TIMED_TOKENS, Linear, gemm_seconds, read_shape, time_linear

from tests.support.checkpoints import write_checkpoint


def test_large_matrices_split_into_trunk_and_mtp(tmp_path: Path) -> None:
    shape = read_shape(write_checkpoint(tmp_path / "ckpt"))
    assert sorted((m.out_features, m.in_features, m.share) for m in shape.trunk) == [
        (128, 16384, 1.0), (16384, 128, 0.25), (16384, 128, 1.0)]
    assert shape.mtp == (Linear(16384, 128, 1.0),)
    assert shape.streamed_bytes == 3 * 16384 * 128 * 2
    assert shape.weight_bytes > shape.streamed_bytes  # the embedding and the small ones count in the size only


def test_a_missing_config_is_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_shape(tmp_path)


def test_timing_a_linear_gives_a_positive_time() -> None:
    assert 0 < time_linear(Linear(64, 64), tokens=4, threads=1, budget_s=0.01) < 1


def test_counts_past_the_timed_ones_are_extrapolated_from_the_cache() -> None:
    linear = Linear(1024, 128)
    half, full = TIMED_TOKENS // 2, TIMED_TOKENS
    cache = {f"1024x128@1/{half}t/1": 1.0, f"1024x128@1/{full}t/1": 2.0}
    # slope 1 s per TIMED_TOKENS/2 tokens: 4x the timed count costs 2 + 6
    assert gemm_seconds((linear,), 4 * full, 1, cache) == pytest.approx(2.0 + 6.0)
    assert gemm_seconds((linear,), full, 1, cache) == 2.0
    assert set(cache) == {f"1024x128@1/{half}t/1", f"1024x128@1/{full}t/1"}  # nothing else was timed
