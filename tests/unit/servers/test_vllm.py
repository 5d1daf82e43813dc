"""The vLLM adapter's argv, checked by vLLM's own argument parser (the CPU build is installed here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.plan import ServerConfig, expand
from harness.servers.vllm import VllmRuntime

GPU_MATRIX = """
name: gpu
hardware: {kind: gpu, gpu: H200, gpus_per_replica: 8}
models:
  dsv3: {id: deepseek-ai/DeepSeek-V3.1, checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4}, tool_call_parser: deepseek_v31}
workloads:
  chat: {kind: random, input_tokens: 1024, output_tokens: 1024}
axes:
  precision: [bf16, fp8, {weights: fp4, kv_cache: fp8}]
  parallel: [{tp: 8, ep: 8}, {tp: 2, dp: 4, ep: 8}]
  speculation: [off, {method: mtp, k: 3}, {method: ngram, k: 4}, {method: eagle3, k: 3, draft_model: org/eagle3}]
"""


@pytest.fixture(scope="module")
def vllm_parser():  # type: ignore[no-untyped-def]
    argparse_utils = pytest.importorskip("vllm.utils.argparse_utils")
    cli_args = pytest.importorskip("vllm.entrypoints.launchers.cli_args")
    return cli_args.make_arg_parser(argparse_utils.FlexibleArgumentParser())


def servers(write_matrix: Callable[[str], Path], text: str) -> list[ServerConfig]:
    return [g.server for g in expand(load_matrix(write_matrix(text))).groups]


def argv(server: ServerConfig, model: str = "/models/x") -> list[str]:
    return list(VllmRuntime().launch_spec(server, model, 8123).argv)


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_every_gpu_server_argv_parses(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    configs = servers(write_matrix, GPU_MATRIX)
    assert len(configs) == 24
    for server in configs:
        VllmRuntime().check(server, "gpu.yaml")
        args = argv(server)
        assert args[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
        parsed = vllm_parser.parse_args(args[3:])
        assert parsed.port == 8123 and parsed.host == "127.0.0.1"
        assert parsed.tensor_parallel_size == server.parallel.tp
        assert parsed.data_parallel_size == server.parallel.dp
        assert parsed.enable_expert_parallel is True
        assert parsed.gpu_memory_utilization == 0.9


def test_speculative_config_json(write_matrix: Callable[[str], Path]) -> None:
    by_label = {s.speculation.label: argv(s) for s in servers(write_matrix, GPU_MATRIX)}
    assert "--speculative-config" not in by_label["off"]
    assert json.loads(flag(by_label["mtp3"], "--speculative-config")) == {"method": "mtp", "num_speculative_tokens": 3}
    assert json.loads(flag(by_label["ngram4"], "--speculative-config")) == {
        "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert json.loads(flag(by_label["eagle33"], "--speculative-config"))["model"] == "org/eagle3"


def test_precision_flags(write_matrix: Callable[[str], Path]) -> None:
    by_label = {s.precision.label: argv(s) for s in servers(write_matrix, GPU_MATRIX)}
    assert flag(by_label["bf16"], "--dtype") == "bfloat16" and "--quantization" not in by_label["bf16"]
    assert flag(by_label["fp8"], "--quantization") == "fp8"
    # fp4 comes from its pre-quantized checkpoint, whose config declares the quantization
    assert "--quantization" not in by_label["fp4-kvfp8"]
    assert flag(by_label["fp4-kvfp8"], "--kv-cache-dtype") == "fp8"


def test_cpu_sizes_kv_cache_in_bytes(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import BASE_MATRIX

    server = servers(write_matrix, BASE_MATRIX + "  speculation: [mtp]\n")[0]
    args = argv(server)
    assert flag(args, "--kv-cache-memory-bytes") == str(2**30)
    assert "--gpu-memory-utilization" not in args and "--enable-expert-parallel" not in args
    assert vllm_parser.parse_args(args[3:]).kv_cache_memory_bytes == 2**30


def test_removed_flag_is_rejected_by_vllm(vllm_parser) -> None:  # type: ignore[no-untyped-def]
    # The parser really checks: a flag vLLM removed makes it exit, so the argv tests above can fail.
    with pytest.raises(SystemExit):
        vllm_parser.parse_args(["--model", "x", "--speculative-disable-by-batch-size", "4"])


def test_ep_that_vllm_cannot_express(write_matrix: Callable[[str], Path]) -> None:
    text = GPU_MATRIX.replace("parallel: [{tp: 8, ep: 8}, {tp: 2, dp: 4, ep: 8}]", "parallel: [{tp: 8, ep: 4}]")
    with pytest.raises(ConfigError, match="ep: 8"):
        VllmRuntime().check(servers(write_matrix, text)[0], "gpu.yaml")


def test_precision_without_checkpoint(write_matrix: Callable[[str], Path]) -> None:
    text = GPU_MATRIX.replace(", checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4}", "")
    fp4 = next(s for s in servers(write_matrix, text) if s.precision.weights == "fp4")
    with pytest.raises(ConfigError, match="checkpoints.fp4"):
        VllmRuntime().check(fp4, "gpu.yaml")
