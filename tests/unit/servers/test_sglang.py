"""The SGLang adapter's argv: its shape here, and every generated command line checked by SGLang's own parser.

SGLang cannot be imported beside vLLM's CPU build, so its parser runs in a subprocess from ``build/sglang-args``
(SGLang 0.5.23 installed there without its GPU dependencies: see the Makefile's setup). Without that directory
the parser tests skip and say how to build it; the shape tests always run.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.config.hardware import CpuHardware
from harness.config.topology import Topology
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan import ServerConfig
from harness.servers import deployment_spec
from harness.servers.runtime import NodeRank, resolve_model_path
from harness.servers.sglang import SglangRuntime

from tests.support.engines import SGLANG_ARGV_CHECK, SGLANG_DIR

REPO = Path(__file__).resolve().parents[3]
COMMITTED = sorted((REPO / "matrices").glob("*.yaml"))
GPU_MATRIX = """
name: gpu
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}
models:
  dsv3: {id: deepseek-ai/DeepSeek-V3.1, family: deepseek-v31, routed_experts: 256, num_nextn_predict_layers: 1,
         checkpoints: {fp4: nvidia/DeepSeek-V3.1-NVFP4, mxfp4: org/dsv3-mxfp4, int4: org/dsv3-int4},
         quantization: {int4: moe_wna16}}
workloads:
  chat: {kind: random, input_tokens: 1024, output_tokens: 1024}
axes:
  runtime: [sglang]
  precision: [bf16, fp8-kvfp8, fp4, mxfp4, int4]
  parallel: [{tp: 2, dp: 8, ep: 8}, {tp: 8, ep: 8}, {tp: 16}]
  speculation: [off, {method: mtp, k: 3}, {method: eagle, k: 2, draft_model: org/eagle},
                {method: eagle3, k: 3, top_k: 4, draft_tokens: 8, draft_model: org/eagle3},
                {method: draft_model, k: 4, draft_model: org/small}, {method: ngram, k: 4}]
  concurrency: [64]
unsupported: skip
server: {chunked_prefill: 8192, prefix_caching: false, grammar_backend: xgrammar}
runtimes: {sglang: {python: /opt/sglang/bin/python}}
"""
RENAMED = [["--model-path", "x", "--enable-ep-moe"], ["--model-path", "x", "--kv-cache-dtype", "fp8"],
           ["--model-path", "x", "--speculative-algorithm", "MTP"]]


def gpu_servers(tmp: Path, text: str = GPU_MATRIX) -> list[ServerConfig]:
    path = tmp / "gpu.yaml"
    path.write_text(textwrap.dedent(text))
    return [g.server for g in load_plan(path).groups]


def engine_args(server: ServerConfig, model: str | None = None) -> list[str]:
    """What follows the server module (``sglang.launch_server``, or the CPU launcher on a CPU)."""
    runtime = SglangRuntime()
    argv = list(runtime.launch_spec(server, model or resolve_model_path(server), 8123).argv)
    return argv[argv.index(runtime.server_module(server)) + 1:]


def node_args(rank: int) -> list[str]:
    """One node's argv of a 2-node TP16 replica."""
    server = next(s for s in gpu_servers(Path(tempfile.mkdtemp())) if s.label == "dsv3/sglang/bf16/tp16/off")
    node = NodeRank(rank=rank, nodes=2, head_addr="10.0.0.1", rendezvous_port=20000, ranks_per_node=8)
    argv = list(SglangRuntime().node_launch_spec(server, "/m", 8123, node).argv)
    return argv[argv.index("sglang.launch_server") + 1:]


def pd_parts() -> list[list[str]]:
    """The prefill and decode servers' argv of a 1P1D deployment of a TP16 server."""
    server = next(s for s in gpu_servers(Path(tempfile.mkdtemp())) if s.label == "dsv3/sglang/bf16/tp16/off")
    server = server.model_copy(update={"topology": Topology.model_validate({"prefill": 1, "decode": 1})})
    ports = itertools.count(9001)
    parts = deployment_spec(server, 9000, lambda: next(ports), Path("/tmp/kv")).parts
    return [list(p.spec.argv[p.spec.argv.index("sglang.launch_server") + 1:]) for p in parts]


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def committed_servers() -> list[tuple[str, ServerConfig]]:
    found = []
    for path in COMMITTED:
        plan = load_plan(path)
        found += [(path.name, g.server) for g in plan.groups if g.server.runtime == "sglang"]
    return found


@pytest.fixture(scope="module")
def sglang_parse(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """SGLang's verdicts on every command line these tests need, from one subprocess (importing SGLang is slow)."""
    if not (SGLANG_DIR / "sglang").is_dir():
        pytest.skip(f"SGLang's parser is not installed at {SGLANG_DIR}: run `make setup` (pip install --no-deps "
                    "--target build/sglang-args sglang==0.5.23 orjson IPython traitlets)")
    batches = {"committed": [engine_args(s) for _, s in committed_servers()],
               "gpu": [engine_args(s) for s in gpu_servers(tmp_path_factory.mktemp("m"))], "renamed": RENAMED,
               "nodes": [node_args(rank) for rank in (0, 1)], "pd": pd_parts()}
    flat = [argv for batch in batches.values() for argv in batch]
    env = {**os.environ, "PYTHONPATH": str(SGLANG_DIR)}
    done = subprocess.run([sys.executable, str(SGLANG_ARGV_CHECK)], input=json.dumps(flat), capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    out, start = {}, 0
    for name, batch in batches.items():
        out[name] = results[start:start + len(batch)]
        start += len(batch)
    return out


def test_every_committed_sglang_cell_parses(sglang_parse: dict[str, list[dict[str, Any]]]) -> None:
    servers = committed_servers()
    assert servers, "no committed matrix runs SGLang"
    for (name, server), result in zip(servers, sglang_parse["committed"], strict=True):
        SglangRuntime().check(server, name)
        assert result["ok"], (name, server.label, result["error"])
        assert result["args"]["max_running_requests"] == server.settings.max_num_seqs
        assert result["args"]["enable_metrics"] is True
        if isinstance(server.hardware, CpuHardware):  # the CPU flags SGLang's parser must take as they are written
            args = result["args"]
            assert (args["device"], args["attention_backend"]) == ("cpu", "intel_amx")
            assert args["disable_cuda_graph"] is True and args["disable_overlap_schedule"] is True
            assert args["max_total_tokens"] > 0


def test_every_gpu_variant_parses(sglang_parse: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    servers = gpu_servers(tmp_path)
    for server, result in zip(servers, sglang_parse["gpu"], strict=True):
        assert result["ok"], (server.label, result["error"])
        args, par = result["args"], server.parallel
        assert (args["tp_size"], args["attn_dp_size"], args["ep_size"]) == (par.world_size, par.dp, par.ep)
        assert args["max_running_requests"] == 256 and args["host"] == "127.0.0.1" and args["port"] == 8123
        assert args["chunked_prefill_size"] == 8192 and args["disable_radix_cache"] is True
        assert args["tool_call_parser"] == "deepseekv31" and args["grammar_backend"] == "xgrammar"


def test_renamed_flags_fail_the_parser(sglang_parse: dict[str, list[dict[str, Any]]]) -> None:
    # The check can fail: flags SGLang removed or never had are refused, so a rename breaks CI, not a GPU run.
    assert [r["ok"] for r in sglang_parse["renamed"]] == [False, False, False]
    assert "fp8" in str(sglang_parse["renamed"][1]["error"])


def test_layout_and_speculation_flags(tmp_path: Path) -> None:
    by_label = {s.label: engine_args(s, "/m") for s in gpu_servers(tmp_path)}
    mtp = by_label["dsv3/sglang/bf16/tp2-dp8-ep8/mtp3"]
    assert (flag(mtp, "--tp-size"), flag(mtp, "--attn-dp-size"), flag(mtp, "--ep-size")) == ("16", "8", "8")
    assert flag(mtp, "--speculative-algorithm") == "NEXTN" and flag(mtp, "--speculative-num-draft-tokens") == "4"
    tree = by_label["dsv3/sglang/bf16/tp8-ep8/eagle3k3t4"]
    assert (flag(tree, "--speculative-algorithm"), flag(tree, "--speculative-eagle-topk"),
            flag(tree, "--speculative-num-draft-tokens")) == ("EAGLE3", "4", "8")
    assert "--attn-dp-size" not in tree
    ngram = by_label["dsv3/sglang/bf16/tp16/ngram4"]
    assert flag(ngram, "--speculative-num-draft-tokens") == "5" and "--ep-size" not in ngram
    standalone = by_label["dsv3/sglang/bf16/tp16/draft_model4"]
    assert flag(standalone, "--speculative-algorithm") == "STANDALONE"
    assert flag(by_label["dsv3/sglang/fp8-kvfp8/tp16/off"], "--kv-cache-dtype") == "fp8_e4m3"
    assert flag(by_label["dsv3/sglang/fp4/tp16/off"], "--quantization") == "modelopt_fp4"
    assert flag(by_label["dsv3/sglang/int4/tp16/off"], "--quantization") == "moe_wna16"
    assert all(flag(a, "--max-running-requests") == "256" and "--enable-metrics" in a for a in by_label.values())


def test_dp_attention_limits_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "gpu.yaml"
    path.write_text(textwrap.dedent(GPU_MATRIX))
    plan = load_plan(path)
    skipped = {s.server.label for s in plan.skipped}
    assert "dsv3/sglang/bf16/tp2-dp8-ep8/ngram4" in skipped and "dsv3/sglang/bf16/tp2-dp8-ep8/draft_model4" in skipped


def test_sglang_needs_its_own_environment(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"runtimes\.sglang") as info:
        gpu_servers(tmp_path, GPU_MATRIX.replace("runtimes: {sglang: {python: /opt/sglang/bin/python}}", ""))
    assert "image" in info.value.fix


def test_a_stop_skips_the_crash_dumps(tmp_path: Path) -> None:
    # the harness's SIGTERM to the group reads as a scheduler crash to SGLang: no 5 s sleep and py-spy dump (nor a
    # CUDA core dump) at each stop, unless the matrix's own environment asks for them
    env = SglangRuntime().engine_env(gpu_servers(tmp_path)[0])
    assert (env["SGLANG_PYSPY_DUMP_BEFORE_CRASH"], env["SGLANG_CUDA_COREDUMP_BEFORE_CRASH"]) == ("0", "0")
    text = GPU_MATRIX.replace("runtimes: {sglang: {python: /opt/sglang/bin/python}}",
                              "runtimes: {sglang: {python: /opt/sglang/bin/python, "
                              "env: {SGLANG_PYSPY_DUMP_BEFORE_CRASH: '1'}}}")
    assert SglangRuntime().engine_env(gpu_servers(tmp_path, text)[0])["SGLANG_PYSPY_DUMP_BEFORE_CRASH"] == "1"


def test_a2a_backend_that_would_reset_ep(tmp_path: Path) -> None:
    text = GPU_MATRIX.replace("runtimes: {sglang: {python: /opt/sglang/bin/python}}",
                              "runtimes: {sglang: {python: /opt/sglang/bin/python, moe_a2a_backend: deepep}}")
    path = tmp_path / "gpu.yaml"
    path.write_text(textwrap.dedent(text))
    plan = load_plan(path)
    reasons = {r for s in plan.skipped for r in s.reasons}
    assert any("resets ep=8" in r for r in reasons)
    kept = [g.server for g in plan.groups if g.server.parallel.ep == 8 and g.server.parallel.world_size == 8]
    assert kept and flag(engine_args(kept[0], "/m"), "--moe-a2a-backend") == "deepep"


def test_each_node_gets_its_own_rank(sglang_parse: dict[str, list[dict[str, Any]]]) -> None:
    # the rank is written per node by the driver, never expanded once by a batch shell (SGLang's own example bug)
    for rank, result in enumerate(sglang_parse["nodes"]):
        assert result["ok"], result["error"]
        args = result["args"]
        assert (args["nnodes"], args["node_rank"], args["dist_init_addr"]) == (2, rank, "10.0.0.1:20000")


def test_prefill_and_decode_parts_parse(sglang_parse: dict[str, list[dict[str, Any]]]) -> None:
    prefill, decode = sglang_parse["pd"]
    assert prefill["ok"] and decode["ok"], (prefill["error"], decode["error"])
    assert (prefill["args"]["disaggregation_mode"], decode["args"]["disaggregation_mode"]) == ("prefill", "decode")
    assert prefill["args"]["disaggregation_transfer_backend"] == "mooncake"
    assert prefill["args"]["disaggregation_bootstrap_port"] == 9002


def test_every_family_names_a_parser_sglang_lists() -> None:
    names = SGLANG_DIR / "sglang" / "srt" / "function_call" / "parser_names.py"
    if not names.is_file():
        pytest.skip(f"SGLang is not installed at {SGLANG_DIR} (make setup)")
    scope: dict[str, object] = {}
    exec(compile(names.read_text(), str(names), "exec"), scope)  # a dependency-free list, by SGLang's design
    assert set(SglangRuntime.tool_parsers.values()) <= set(scope["TOOL_CALL_PARSER_NAMES"])  # type: ignore[arg-type]
