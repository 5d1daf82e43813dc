"""The checkpoint's GEMMs: read from a real safetensors header, split into the trunk's large and small matrices, the
LM head and the MTP module, experts counted by their routed share (large) or as one fused call (small), timed with
torch, extrapolated past the largest timed token count, and split between tensor-parallel ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.predict.cpu_kernels import (
    TIMED_TOKENS,
    Linear,
    gemm_seconds,
    mflop,
    rank_gemm_ms,
    read_shape,
    time_linear,
)

from tests.support.checkpoints import write_checkpoint


def test_large_matrices_split_into_trunk_and_mtp(tmp_path: Path) -> None:
    shape = read_shape(write_checkpoint(tmp_path / "ckpt"))
    assert sorted((m.out_features, m.in_features, m.share) for m in shape.trunk) == [
        (128, 16384, 1.0), (16384, 128, 0.25), (16384, 128, 1.0)]
    assert shape.mtp == (Linear(16384, 128, 1.0),)
    assert shape.weight_bytes > sum(m.bytes for m in shape.trunk)  # the embedding counts in the size only
    assert shape.small == (Linear(128, 128, 1.0),) and shape.layers == 2 and shape.head == ()


def test_small_experts_are_one_fused_call_and_the_head_is_apart(tmp_path: Path) -> None:
    import json

    import torch
    from safetensors.torch import save_file

    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 1, "num_local_experts": 4,
                                                      "num_experts_per_tok": 2}))
    tensors = {f"model.layers.0.mlp.experts.{e}.{proj}.weight": torch.zeros(64, 32, dtype=torch.bfloat16)
               for e in range(4) for proj in ("gate_proj", "up_proj")}
    tensors["lm_head.weight"] = torch.zeros(256, 32, dtype=torch.bfloat16)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    shape = read_shape(tmp_path)
    assert shape.small == (Linear(64, 32, 2.0), Linear(64, 32, 2.0))  # gate and up: 2 rows a token each
    assert shape.head == shape.cached_head == (Linear(256, 32),) and shape.trunk == shape.streamed_head == ()
    assert mflop(shape.small, rows=10) == pytest.approx(2 * 2 * 64 * 32 * 2.0 * 10 / 1e6)


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


def test_each_rank_times_its_share_of_every_matrix() -> None:
    cache = {"512x128@1/4t/2": 1e-3, "64x256@1/4t/2": 2e-3}
    assert rank_gemm_ms((Linear(1024, 128), Linear(128, 256)), 4, ranks=2, threads=2, cache=cache) \
        == pytest.approx(3.0)
    assert rank_gemm_ms((), 4, ranks=2, threads=2, cache=cache) == 0.0
