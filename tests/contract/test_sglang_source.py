"""Every name the SGLang adapter relies on, found in SGLang 0.5.23's own source (SGLang cannot serve on this CPU).

The expected names always come from the harness (the adapter's constants, its profiler, the load client, the
Prometheus reader); SGLang's source, installed without its dependencies under ``build/sglang-args`` by
``make setup``, is only read (``tests.support.sglang_source``), never imported. Without it every test here fails
and says to run ``make setup``: these checks are the only contact the adapter has with a real SGLang on CPU.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import prometheus_client
import pytest

from harness.config import load_matrix
from harness.load.client import ENDPOINTS, request_body
from harness.load.openai_stream import StreamState, completions_text
from harness.load.prompts import Api, PlannedRequest
from harness.plan import expand
from harness.servers import sglang as adapter
from harness.servers.profiler import ProfileMode
from harness.servers.prometheus import MetricsSnapshot, histogram_delta, parse_exposition, scrape
from harness.servers.sglang import SGLANG_METRICS, SglangProfiler, SglangRuntime
from harness.servers.speculation_counters import SglangSpeculationCounters

from tests.support import sglang_source as src
from tests.support.engines import SGLANG_DIR
from tests.support.matrices import BASE_MATRIX

PROTOCOL = "srt/entrypoints/openai/protocol.py"
PROFILER = "srt/managers/scheduler_components/profiler_manager.py"
SPEC = SglangRuntime.speculation_counters
assert isinstance(SPEC, SglangSpeculationCounters)
HISTOGRAMS = [name for name in (SGLANG_METRICS.ttft, SGLANG_METRICS.tpot, SGLANG_METRICS.itl, SGLANG_METRICS.e2el,
                                SGLANG_METRICS.queue, SGLANG_METRICS.kv_transfer) if name]
COUNTERS = sorted({SGLANG_METRICS.prefix_queries, SGLANG_METRICS.prefix_hits, *SGLANG_METRICS.counters,
                   SPEC.generated, SPEC.verify_calls})


@pytest.fixture(scope="module", autouse=True)
def sglang_source() -> None:
    if not (src.ROOT / "srt").is_dir():
        pytest.fail(src.MISSING, pytrace=False)


def _exposed(name: str, kind: str) -> MetricsSnapshot:
    """What SGLang's /metrics shows for its metric ``name`` of ``kind`` (as defined in its source), once used."""
    registry = prometheus_client.CollectorRegistry()
    metric = getattr(prometheus_client, kind)(name, "as SGLang defines it", registry=registry)
    if kind == "Histogram":
        metric.observe(0.5)
    else:
        metric.inc(3)
    return parse_exposition(prometheus_client.generate_latest(registry).decode())


@pytest.mark.parametrize("name", HISTOGRAMS)
def test_latency_histograms_are_sglang_histograms(name: str) -> None:
    assert src.metrics().get(name) == "Histogram", f"SGLang's server defines no histogram {name}"
    stats = histogram_delta(MetricsSnapshot({}), _exposed(name, "Histogram"), name)
    assert stats is not None and stats.count == 1


@pytest.mark.parametrize("name", COUNTERS)
def test_counters_are_sglang_counters_read_through_their_exposition(name: str) -> None:
    # prometheus_client exposes Counter("x") and Counter("x_total") both as the sample x_total
    defined = {n: k for n, k in src.metrics().items() if n in (name, name + "_total")}
    assert list(defined.values()) == ["Counter"], f"SGLang's server defines no counter {name}: {defined}"
    (source_name,) = defined
    assert _exposed(source_name, "Counter").total(name) == 3


def test_metrics_route_is_where_the_harness_scrapes() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="")

    asyncio.run(scrape("http://sglang", transport=httpx.MockTransport(answer)))
    (request,) = seen
    methods, _ = src.routes().get(request.url.path, (frozenset(), None))
    assert request.method in methods, f"SGLang serves no {request.method} {request.url.path}"


def test_health_route_is_polled(write_matrix: Callable[..., Path]) -> None:
    path = write_matrix(BASE_MATRIX + "  runtime: [sglang]\nruntimes: {sglang: {python: /usr/bin/python3}}\n")
    server = expand(load_matrix(path)).groups[0].server
    health = SglangRuntime().launch_spec(server, "/m", 8123).health_path
    assert health is not None
    methods, handler = src.routes().get(health, (frozenset(), None))
    assert "GET" in methods and handler is not None, f"SGLang serves no GET {health}"  # ServerProcess GETs it


@pytest.mark.parametrize("api", sorted(ENDPOINTS))
def test_openai_routes_take_every_field_the_load_client_sends(api: Api) -> None:
    endpoint = ENDPOINTS[api]
    methods, handler = src.routes().get(endpoint.path, (frozenset(), None))
    assert "POST" in methods and handler is not None, f"SGLang serves no POST {endpoint.path}"
    request = PlannedRequest(index=0, warmup=False, api=api, prompt="hi", input_tokens=1, max_tokens=4,
                             tools=({"type": "function", "function": {"name": "f"}},), tool_choice="auto")
    body = request_body(request, "m")
    (model,) = src.handler_models(handler)
    known = src.fields(*model)
    # SGLang's request models ignore unknown fields: a misspelt one would be dropped in silence
    assert set(body) <= set(known), f"SGLang's {model[1]} has no {sorted(set(body) - set(known))}"
    for key, value in body.items():
        if isinstance(value, dict):
            (nested,) = src.named_classes(model[0], known[key])
            missing = set(value) - set(src.fields(*nested))
            assert not missing, f"SGLang's {nested[1]} has no {sorted(missing)}"


def _sample(module: str, cls: str) -> dict[str, Any]:
    """A payload of SGLang's model ``cls``: every int field 7, every nested model filled in the same way."""
    out: dict[str, Any] = {}
    for name, annotation in src.fields(module, cls).items():
        if nested := src.named_classes(module, annotation):
            out[name] = _sample(*nested[0])
        elif any(isinstance(n, ast.Name) and n.id == "int" for n in ast.walk(annotation)):
            out[name] = 7
    return out


@pytest.mark.parametrize("response", ["CompletionStreamResponse", "ChatCompletionStreamResponse"])
def test_stream_reader_finds_the_usage_sglang_sends(response: str) -> None:
    usage = src.named_classes(PROTOCOL, src.fields(PROTOCOL, response).get("usage", ast.Constant(None)))
    assert usage, f"SGLang's {response} carries no usage model"
    chunk = {"choices": [{"index": 0, "text": "x"}], "usage": _sample(*usage[0])}
    state = StreamState(streamed_text=completions_text, sent=0.0)
    state.feed(json.dumps(chunk).encode(), 1.0)
    # a None: SGLang's usage spells prompt, completion or cached tokens otherwise than the reader
    assert (state.prompt_tokens, state.completion_tokens, state.cached_tokens) == (7, 7, 7), chunk["usage"]


@pytest.mark.parametrize("path", [SglangProfiler.start_path, SglangProfiler.stop_path])
def test_profile_routes_take_a_post(path: str) -> None:
    methods, handler = src.routes().get(path, (frozenset(), None))
    assert "POST" in methods and handler is not None, f"SGLang serves no POST {path}"  # profiling.window POSTs


@pytest.mark.parametrize("mode", ["nsys", "torch"])
def test_profile_body_and_environment(mode: ProfileMode, tmp_path: Path) -> None:
    profiler = SglangProfiler()
    body = profiler.start_body(mode, tmp_path, "cell")
    _, handler = src.routes()[profiler.start_path]
    assert body is not None and handler is not None
    (model,) = src.handler_models(handler)
    assert set(body) <= set(src.fields(*model)), f"SGLang's {model[1]} ignores {set(body) - set(src.fields(*model))}"
    # what the scheduler's profiler acts on: its activity_map's keys and each `"X" in activities`
    acted_on = src.dict_keys(PROFILER, "activity_map") | src.compared_in(PROFILER, "activities")
    assert set(body["activities"]) <= acted_on, f"SGLang's profiler ignores {set(body['activities']) - acted_on}"
    unknown = set(profiler.server_env(mode, tmp_path)) - src.class_attributes("srt/environ.py", "Envs")
    assert not unknown, f"SGLang reads no environment variable {sorted(unknown)} (srt/environ.py)"


def test_torch_window_turns_off_stacks_and_shapes(tmp_path: Path) -> None:
    # SGLang records both unless the start body says False (an absent key, None, means True): the tokenizer manager
    # keeps an explicit False, and the scheduler's torch profiler passes both to torch.profiler.profile
    body = SglangProfiler().start_body("torch", tmp_path, "cell")
    assert body is not None and body["with_stack"] is False and body["record_shapes"] is False
    start = ast.unparse(src.tree("srt/managers/tokenizer_control_mixin.py"))
    assert "req.with_stack is False" in start and "req.record_shapes is not False" in start, \
        "SGLang's start_profile no longer keeps an explicit with_stack/record_shapes False"
    profiler = ast.unparse(src.tree("srt/utils/profile_utils.py"))
    assert "with_stack=self.with_stack if" in profiler and "record_shapes=self.record_shapes if" in profiler


def test_quiet_stop_names_what_sglang_reads() -> None:
    unknown = set(adapter.QUIET_STOP_ENV) - src.class_attributes("srt/environ.py", "Envs")
    assert not unknown, f"SGLang reads no environment variable {sorted(unknown)} (srt/environ.py)"
    dump = ast.unparse(src.tree("srt/managers/tokenizer_manager.py"))
    assert all(f"envs.{name}.get()" in dump for name in adapter.QUIET_STOP_ENV), \
        "SGLang's crash dump before exit no longer reads these switches (TokenizerManager.dump_requests_before_crash)"


@pytest.mark.parametrize("family", sorted(SglangRuntime.tool_parsers))
def test_tool_parser_is_registered_and_current(family: str) -> None:
    parser = SglangRuntime.tool_parsers[family]
    assert parser in src.dict_keys("srt/function_call/function_call_parser.py", "ToolCallParserEnum")
    # --tool-call-parser's choices
    assert parser in src.strings(src.assigned("srt/function_call/parser_names.py", "TOOL_CALL_PARSER_NAMES"))
    deprecated = src.dict_keys("srt/arg_groups/serving_hook.py", "deprecated_tool_call_parsers")
    assert parser not in deprecated, f"{parser} is deprecated: SGLang rewrites it, with a warning, at each launch"


@pytest.mark.parametrize("method", sorted(adapter.ALGORITHM))
def test_speculative_algorithm_is_sglangs(method: str) -> None:
    # what SpeculativeAlgorithm.from_string takes: a member's name, or a reserved alias of one (NEXTN -> EAGLE)
    algorithms = src.class_attributes("srt/speculative/spec_info.py", "SpeculativeAlgorithm") | src.strings(
        src.assigned("srt/speculative/spec_registry.py", "_RESERVED_ALIASES"))
    name = adapter.ALGORITHM[method]
    assert name in algorithms, f"SGLang takes no --speculative-algorithm {name}"


@pytest.mark.parametrize(("flag", "values"), [
    ("--quantization", set(adapter.QUANTIZATION.values())), ("--kv-cache-dtype", set(adapter._KV_DTYPE.values())),
    ("--disaggregation-transfer-backend", set(adapter.TRANSFER_BACKENDS)),
    ("--moe-a2a-backend", set(adapter.EP_SPANNING_A2A)),
])
def test_flag_values_are_sglang_choices(flag: str, values: set[str]) -> None:
    choices = src.flag_choices(flag.removeprefix("--").replace("-", "_"))
    assert values <= choices, f"{flag} does not take {sorted(values - choices)}"


def test_ep_spanning_backends_are_sglangs() -> None:
    spanning = src.strings(src.assigned("srt/arg_groups/overrides.py", "_A2A_EP_SPANNING_BACKENDS"))
    assert set(adapter.EP_SPANNING_A2A) == spanning, (sorted(set(adapter.EP_SPANNING_A2A) - spanning), sorted(spanning))


def test_server_module_and_package() -> None:
    assert (src.ROOT.parent / (SglangRuntime.module.replace(".", "/") + ".py")).is_file()
    installed = {d.metadata["Name"] for d in importlib.metadata.distributions(path=[str(SGLANG_DIR)])}
    assert SglangRuntime.packages[0] in installed, installed


def test_version_patterns_match_what_the_server_logs() -> None:
    printed = src.printed_with("__version__", "9.9.9")
    patterns: tuple[re.Pattern[str], ...] = SglangRuntime.server_version_patterns
    for pattern in patterns:
        assert any(pattern.search(text) for _, text in printed), f"SGLang's server logs no line {pattern.pattern!r}"
    if not patterns:
        assert not printed, f"SGLang's server logs its version: give the adapter a pattern for {printed}"
