"""The vLLM adapter's argv, checked by vLLM's own argument parser (the CPU build is installed here)."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan import ServerConfig, expand
from harness.servers import get_runtime, resolve_model_path
from harness.servers.vllm import VllmRuntime

REPO = Path(__file__).resolve().parents[3]
COMMITTED = sorted((REPO / "matrices").glob("*.yaml"))
GPU_MATRIX = """
name: gpu
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
models:
  dsv3: {id: deepseek-ai/DeepSeek-V3.1, checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4}, tool_call_parser: deepseek_v31,
         routed_experts: 256, num_nextn_predict_layers: 1}
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


def check_parsed(parsed, server: ServerConfig) -> None:  # type: ignore[no-untyped-def]
    """What argparse cannot see: keys inside the JSON configs and the tool parser's name."""
    from vllm.config.speculative import SpeculativeConfig, SpeculativeMethod
    from vllm.tool_parsers import _TOOL_PARSERS_TO_REGISTER

    assert parsed.tensor_parallel_size == server.parallel.tp
    assert parsed.data_parallel_size == server.parallel.dp
    assert bool(parsed.enable_expert_parallel) == (server.parallel.ep > 1)
    if parsed.speculative_config is not None:
        fields = {f.name for f in dataclasses.fields(SpeculativeConfig)}
        assert set(parsed.speculative_config) <= fields, set(parsed.speculative_config) - fields
        assert parsed.speculative_config["method"] in typing.get_args(SpeculativeMethod)
    if parsed.tool_call_parser is not None:
        assert parsed.tool_call_parser in _TOOL_PARSERS_TO_REGISTER


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_committed_vllm_cell_parses(path: Path, vllm_parser) -> None:  # type: ignore[no-untyped-def]
    plan = load_plan(path)
    groups = [g for g in plan.groups if g.server.runtime == "vllm"]
    for group in groups:
        runtime = get_runtime("vllm")
        runtime.check(group.server, str(path))
        args = list(runtime.launch_spec(group.server, resolve_model_path(group.server), 8123).argv)
        args = args[args.index("-m") + 2:]
        check_parsed(vllm_parser.parse_args(args), group.server)


def test_every_gpu_server_argv_parses(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    configs = servers(write_matrix, GPU_MATRIX)
    assert len(configs) == 24
    for server in configs:
        VllmRuntime().check(server, "gpu.yaml")
        args = argv(server)
        assert args[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
        parsed = vllm_parser.parse_args(args[3:])
        assert parsed.port == 8123 and parsed.host == "127.0.0.1"
        assert parsed.gpu_memory_utilization == 0.9
        check_parsed(parsed, server)


def test_speculative_config_json(write_matrix: Callable[[str], Path]) -> None:
    by_label = {s.speculation.label: argv(s) for s in servers(write_matrix, GPU_MATRIX)}
    assert "--speculative-config" not in by_label["off"]
    assert json.loads(flag(by_label["mtp3"], "--speculative-config")) == {"method": "mtp", "num_speculative_tokens": 3}
    assert json.loads(flag(by_label["ngram4"], "--speculative-config")) == {
        "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert json.loads(flag(by_label["eagle3k3"], "--speculative-config"))["model"] == "org/eagle3"



def test_a_fixture_drafter_is_given_to_the_engine_as_its_built_directory(
        write_matrix: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_FIXTURES_DIR", str(tmp_path))
    text = GPU_MATRIX.replace("draft_model: org/eagle3", 'draft_model: "fixture:tiny-qwen3-eagle3"')
    by_label = {s.speculation.label: argv(s) for s in servers(write_matrix, text)}
    config = json.loads(flag(by_label["eagle3k3"], "--speculative-config"))
    assert config["model"] == str(tmp_path / "tiny-qwen3-eagle3")

def test_eagle_suffix_and_draft_tp(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    # one precision and one parallel layout, replaced in place (a second `precision:` key is refused as written twice)
    text = GPU_MATRIX.replace(
        "speculation: [off, {method: mtp, k: 3}, {method: ngram, k: 4}, "
        "{method: eagle3, k: 3, draft_model: org/eagle3}]",
        "speculation: [{method: eagle, k: 2, draft_model: org/eagle, draft_tp: 1}, {method: suffix, k: 16},"
        " {method: draft_model, k: 4, draft_model: org/small}]").replace(
        "precision: [bf16, fp8, {weights: fp4, kv_cache: fp8}]", "precision: [fp8]").replace(
        "parallel: [{tp: 8, ep: 8}, {tp: 2, dp: 4, ep: 8}]", "parallel: [{tp: 8, ep: 8}]")
    assert text.count("precision: [fp8]") == 1 and text.count("parallel: [{tp: 8, ep: 8}]") == 1
    by_method = {s.speculation.method: s for s in servers(write_matrix, text)}
    assert json.loads(flag(argv(by_method["eagle"]), "--speculative-config")) == {
        "method": "eagle", "model": "org/eagle", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1}
    assert json.loads(flag(argv(by_method["suffix"]), "--speculative-config")) == {
        "method": "suffix", "num_speculative_tokens": 16}
    for server in by_method.values():
        check_parsed(vllm_parser.parse_args(argv(server)[3:]), server)


def test_precision_flags(write_matrix: Callable[[str], Path]) -> None:
    by_label = {s.precision.label: argv(s) for s in servers(write_matrix, GPU_MATRIX)}
    assert flag(by_label["bf16"], "--dtype") == "bfloat16" and "--quantization" not in by_label["bf16"]
    assert flag(by_label["fp8"], "--quantization") == "fp8" and flag(by_label["fp8"], "--dtype") == "bfloat16"
    # fp4 comes from its pre-quantized checkpoint: the flag names its format and the engine checks they agree
    assert flag(by_label["fp4-kvfp8"], "--quantization") == "modelopt_fp4" and "--dtype" not in by_label["fp4-kvfp8"]
    assert flag(by_label["fp4-kvfp8"], "--kv-cache-dtype") == "fp8"


def test_serving_options(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    text = GPU_MATRIX + ("server: {chunked_prefill: 8192, prefix_caching: false, grammar_backend: llguidance}\n"
                         "runtimes: {vllm: {moe_a2a_backend: deepep_low_latency}}\n")
    server = servers(write_matrix, text)[0]
    args = argv(server)
    assert "--enable-chunked-prefill" in args and flag(args, "--max-num-batched-tokens") == "8192"
    assert "--no-enable-prefix-caching" in args and flag(args, "--all2all-backend") == "deepep_low_latency"
    parsed = vllm_parser.parse_args(args[3:])
    assert parsed.structured_outputs_config.backend == "guidance"  # vLLM's name for llguidance
    assert parsed.enable_prefix_caching is False and parsed.max_num_batched_tokens == 8192
    assert parsed.enable_auto_tool_choice and parsed.tool_call_parser == "deepseek_v31"
    off = argv(servers(write_matrix, GPU_MATRIX + "server: {chunked_prefill: off, prefix_caching: true}\n")[0])
    assert "--no-enable-chunked-prefill" in off and "--enable-prefix-caching" in off
    assert vllm_parser.parse_args(off[3:]).enable_chunked_prefill is False


def test_cpu_sizes_kv_cache_in_bytes(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    from tests.support.matrices import BASE_MATRIX

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


def test_draft_tree_is_sglang_only(write_matrix: Callable[[str], Path]) -> None:
    text = GPU_MATRIX.replace("{method: eagle3, k: 3, draft_model: org/eagle3}",
                              "{method: eagle3, k: 3, top_k: 4, draft_tokens: 8, draft_model: org/eagle3}")
    tree = next(s for s in servers(write_matrix, text) if s.speculation.method == "eagle3")
    with pytest.raises(ConfigError, match="chain"):
        VllmRuntime().check(tree, "gpu.yaml")


def test_a_checkpoint_of_rounded_weights_loads_with_no_quantization(write_matrix: Callable[[str], Path],
                                                                   vllm_parser) -> None:  # type: ignore[no-untyped-def]
    """``quantization: {int4: none}``: int4-rounded weights stored in bf16 (the degraded parity fixture) load as
    they are, neither cast by --dtype nor handed to a quantization method."""
    text = GPU_MATRIX.replace("checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4}",
                              "checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4, int4: org/rtn4-bf16}, "
                              "quantization: {int4: none}").replace("precision: [bf16, fp8,", "precision: [int4,")
    server = next(s for s in servers(write_matrix, text) if s.precision.weights == "int4")
    args = argv(server)
    assert "--quantization" not in args and "--dtype" not in args
    check_parsed(vllm_parser.parse_args(args[3:]), server)


def test_multi_node_ranks_parse_with_vllms_parser(write_matrix: Callable[[str], Path], vllm_parser) -> None:  # type: ignore[no-untyped-def]
    """Each node of a 2-node replica gets its own rank's flags: the data-parallel form where DP splits over the
    nodes, --nnodes where one model spans them; every node but the head runs headless."""
    from harness.servers.runtime import NodeRank

    by_label = {s.label: s for s in servers(write_matrix, GPU_MATRIX)}
    dp_server, tp_server = by_label["dsv3/vllm/bf16/tp2-dp4-ep8/off"], by_label["dsv3/vllm/bf16/tp8-ep8/off"]
    for server, form in ((dp_server, "dp"), (tp_server, "nnodes")):
        for rank in (0, 1):
            node = NodeRank(rank=rank, nodes=2, head_addr="10.0.0.1", rendezvous_port=13345, ranks_per_node=4)
            args = list(VllmRuntime().node_launch_spec(server, "/models/x", 8123, node).argv)
            # the head is the API server module; other nodes `vllm serve --headless` (only serve implements it)
            entry = ["-m", "vllm.entrypoints.cli.main", "serve"] if rank else \
                ["-m", "vllm.entrypoints.openai.api_server"]
            assert args[1:len(entry) + 1] == entry
            parsed = vllm_parser.parse_args(args[len(entry) + 1:])
            assert parsed.headless == bool(rank)
            if form == "dp":
                assert (parsed.data_parallel_size, parsed.data_parallel_size_local) == (4, 2)
                assert parsed.data_parallel_address == "10.0.0.1" and parsed.data_parallel_rpc_port == 13345
                assert parsed.data_parallel_start_rank == (2 if rank else None)
            else:
                assert (parsed.nnodes, parsed.node_rank, parsed.master_addr, parsed.master_port) == \
                    (2, rank, "10.0.0.1", 13345)


def test_every_family_names_a_parser_vllm_registers() -> None:
    tool_parsers = pytest.importorskip("vllm.tool_parsers")
    assert set(VllmRuntime.tool_parsers.values()) <= set(tool_parsers._TOOL_PARSERS_TO_REGISTER)


@pytest.mark.usefixtures("host")
def test_a_cpu_server_with_two_ranks_binds_one_core_to_each(write_matrix: Callable[[str], Path],
                                                           vllm_parser) -> None:  # type: ignore[no-untyped-def]
    from tests.support.matrices import BASE_MATRIX

    tp2 = servers(write_matrix, BASE_MATRIX + "  parallel: [{tp: 2}]\n")[0]
    VllmRuntime().check(tp2, "t.yaml")
    spec = VllmRuntime().launch_spec(tp2, "/models/x", 8123)
    assert spec.env["VLLM_CPU_OMP_THREADS_BIND"] == "0|1"  # the injected machine has cores 0 and 1
    assert spec.env["VLLM_NO_USAGE_STATS"] == "1"  # no post to stats.vllm.ai from a benchmark's server
    args = list(spec.argv)
    assert vllm_parser.parse_args(args[3:]).tensor_parallel_size == 2
    tp1 = servers(write_matrix, BASE_MATRIX)[0]
    assert "VLLM_CPU_OMP_THREADS_BIND" not in VllmRuntime().launch_spec(tp1, "/models/x", 8123).env
    mine = servers(write_matrix, BASE_MATRIX + "  parallel: [{tp: 2}]\nruntimes: {vllm: {env: "
                   "{VLLM_CPU_OMP_THREADS_BIND: '1|0'}}}\n")
    assert VllmRuntime().launch_spec(mine[0], "/models/x", 8123).env["VLLM_CPU_OMP_THREADS_BIND"] == "1|0"


@pytest.mark.usefixtures("host")
@pytest.mark.parametrize(("parallel", "rule", "says"), [
    ("{tp: 4}", "vllm-cpu-cores", r"4 ranks need a core each .* may use 2"),
    ("{tp: 2, ep: 2}", "vllm-cpu-ep", r"segfaults at the first request"),
    ("{tp: 1, dp: 2}", "vllm-cpu-dp", r"data parallelism"),
])
def test_cpu_ranks_the_build_cannot_run_are_refused_before_launch(
        write_matrix: Callable[[str], Path], parallel: str, rule: str, says: str) -> None:
    from tests.support.matrices import BASE_MATRIX

    server = servers(write_matrix, BASE_MATRIX + f"  parallel: [{parallel}]\n")[0]
    with pytest.raises(ConfigError, match=says) as raised:
        VllmRuntime().check(server, "t.yaml")
    assert rule in str(raised.value) or "axes.parallel" in str(raised.value)


@pytest.mark.parametrize(("flags", "refused"), [("avx2", True), ("avx2 avx512f", False), ("avx2 amx_tile", False)])
def test_an_fp8_kv_cache_needs_avx512_or_amx(write_matrix: Callable[[str], Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, flags: str, refused: bool) -> None:
    from harness.host import CPUINFO_ENV

    from tests.support.matrices import BASE_MATRIX

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("".join(f"processor\t: {n}\nmodel name\t: X\nflags\t\t: fpu {flags}\n\n" for n in range(2)))
    monkeypatch.setenv(CPUINFO_ENV, str(cpuinfo))
    (kv_fp8,) = servers(write_matrix, BASE_MATRIX + "  precision: [bf16-kvfp8]\n")
    if refused:
        with pytest.raises(ConfigError, match="needs AVX-512 or AMX"):
            VllmRuntime().check(kv_fp8, "t.yaml")
    else:
        VllmRuntime().check(kv_fp8, "t.yaml")
