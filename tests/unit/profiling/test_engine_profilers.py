"""Per-engine switches that make /start_profile and /stop_profile drive the profiler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.profiling import engine_profiler, profiled_runtimes
from harness.servers.vllm import vllm_torch_profiler_config


def test_vllm_nsys_mode_uses_the_cuda_profiler(tmp_path: Path) -> None:
    vllm = engine_profiler("vllm")
    args = vllm.server_args("nsys", tmp_path)
    assert args[0] == "--profiler-config" and json.loads(args[1]) == {"profiler": "cuda"}
    assert vllm.server_env("nsys", tmp_path) == {}
    assert vllm.start_body("nsys", tmp_path, "cell1") is None


def test_vllm_torch_mode_writes_to_an_absolute_dir_without_stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   ) -> None:
    monkeypatch.chdir(tmp_path)
    config = json.loads(engine_profiler("vllm").server_args("torch", Path("traces"))[1])
    # vLLM requires an absolute torch_profiler_dir; keys outside ProfilerConfig would be rejected (extra=forbid).
    assert config == {"profiler": "torch", "torch_profiler_dir": str(tmp_path / "traces"),
                      "torch_profiler_with_stack": False, "ignore_frontend": True}
    assert config == vllm_torch_profiler_config(Path("traces"))
    assert engine_profiler("vllm").start_body("torch", tmp_path, "abc123") == {"profile_prefix": "abc123"}
    assert engine_profiler("vllm").start_body("torch", tmp_path, None) is None


def test_sglang_sends_activities_in_the_start_body(tmp_path: Path) -> None:
    sglang = engine_profiler("sglang")
    assert sglang.server_args("nsys", tmp_path) == []
    assert sglang.start_body("nsys", tmp_path, "c") == {"activities": ["CUDA_PROFILER"]}
    assert sglang.start_body("torch", tmp_path, "c") == {"activities": ["CPU", "GPU"],
                                                          "output_dir": str(tmp_path.resolve()), "profile_prefix": "c",
                                                          "with_stack": False, "record_shapes": False}
    assert sglang.server_env("torch", tmp_path) == {"SGLANG_TORCH_PROFILER_DIR": str(tmp_path.resolve())}


def test_endpoints_are_the_same_for_both() -> None:
    assert profiled_runtimes() == ("sglang", "vllm")
    for engine in map(engine_profiler, profiled_runtimes()):
        assert (engine.start_path, engine.stop_path) == ("/start_profile", "/stop_profile")


def test_unknown_runtime_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="sglang, vllm"):
        engine_profiler("fake")
