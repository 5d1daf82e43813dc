"""Each engine's reading of what its server says about itself, against answers shaped like vLLM 0.32.0's and SGLang
0.5.23's: what is kept, which endpoint said what, and that the server's own API keys never come out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from harness.servers.engine_reveal import SGLANG_KEPT, reveal_nothing, reveal_sglang, reveal_vllm
from harness.servers.prometheus import MetricsSnapshot, parse_exposition

BASE = "http://deployment.test:8000"

VLLM_METRICS = """\
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True",gpu_memory_utilization="0.9"} 1.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3"} 0.0
"""

SGLANG_INFO: dict[str, Any] = {
    "model_path": "/models/qwen3", "served_model_name": "qwen3", "tp_size": 2, "dp_size": 1, "ep_size": 2,
    "pp_size": 1, "quantization": None, "dtype": "bfloat16", "kv_cache_dtype": "auto",
    "speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 4, "expert_distribution_recorder_mode": "stat",
    "context_length": 4096, "version": "0.5.23", "api_key": "SECRET-XYZ", "admin_api_key": "SECRET2",
    "log_level": "info", "random_seed": 0,
}
"""/get_server_info as SGLang 0.5.23 answers it, shortened (it returns 556 server arguments, its keys among them)."""

Routes = dict[str, httpx.Response | Exception]


def client_for(routes: Routes, asked: list[str] | None = None) -> httpx.AsyncClient:
    """A client whose server answers each path as ``routes`` says (404 elsewhere), noting the paths asked."""

    def handler(request: httpx.Request) -> httpx.Response:
        if asked is not None:
            asked.append(request.url.path)
        answer = routes.get(request.url.path, httpx.Response(404, json={"detail": "Not Found"}))
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


Reveal = Callable[[httpx.AsyncClient, str, MetricsSnapshot | None], Any]


async def reveal(revealer: Reveal, routes: Routes, metrics: MetricsSnapshot | None = None,
                 asked: list[str] | None = None) -> Any:
    async with client_for(routes, asked) as client:
        return await revealer(client, BASE, metrics)


async def test_vllm_reveals_its_version_and_cache_config() -> None:
    revealed = await reveal(reveal_vllm, {"/version": httpx.Response(200, json={"version": "0.32.0"})},
                            parse_exposition(VLLM_METRICS))
    assert revealed.version == "0.32.0"
    assert revealed.facts == {"kv_cache": "fp8"}  # nothing in vLLM's answers names TP, EP or quantization
    assert revealed.config == {"block_size": "16", "cache_dtype": "fp8", "enable_prefix_caching": "True",
                               "gpu_memory_utilization": "0.9"}
    assert revealed.sources == {"/version": "200", "/metrics vllm:cache_config_info": "found"}


async def test_vllm_without_the_cache_gauge_or_metrics_reveals_its_version_only() -> None:
    routes: Routes = {"/version": httpx.Response(200, json={"version": "0.32.0"})}
    bare = parse_exposition(VLLM_METRICS.split("# HELP vllm:num_requests_running")[0].replace("cache_config", "x"))
    absent = await reveal(reveal_vllm, routes, bare)
    assert absent.facts == {} and absent.sources["/metrics vllm:cache_config_info"] == "absent"
    unscraped = await reveal(reveal_vllm, routes, None)
    assert unscraped.facts == {} and unscraped.sources == {"/version": "200"}


@pytest.mark.parametrize(("answer", "source"), [
    (httpx.Response(404), "404"),
    (httpx.Response(200, text="<html>gateway</html>"), "200, not JSON"),
    (httpx.ConnectError("refused"), "unreachable (ConnectError)"),
])
async def test_vllm_without_a_version_says_what_the_endpoint_answered(answer: httpx.Response | Exception,
                                                                      source: str) -> None:
    revealed = await reveal(reveal_vllm, {"/version": answer})
    assert revealed.version is None and revealed.sources["/version"] == source


async def test_sglang_reveals_its_recipe_from_server_info() -> None:
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(200, json=SGLANG_INFO)})
    assert revealed.version == "0.5.23"
    assert revealed.facts == {"weights": "bf16", "kv_cache": "auto", "tp": "2", "dp": "1", "ep": "2",
                              "speculation": "ngram", "expert_load": "on"}
    assert set(revealed.config) <= set(SGLANG_KEPT)
    assert revealed.config["tp_size"] == 2 and "log_level" not in revealed.config
    assert revealed.sources == {"/get_server_info": "200"}


async def test_sglang_keeps_its_speculation_depth() -> None:
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(200, json=SGLANG_INFO)})
    assert revealed.config["speculative_num_draft_tokens"] == 4


async def test_sglang_never_keeps_its_own_api_keys() -> None:
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(200, json=SGLANG_INFO)})
    stored = revealed.model_dump_json()
    assert "SECRET" not in stored and "api_key" not in revealed.config


async def test_sglang_falls_back_to_server_info_on_newer_builds() -> None:
    asked: list[str] = []
    revealed = await reveal(reveal_sglang, {"/server_info": httpx.Response(200, json=SGLANG_INFO)}, asked=asked)
    assert asked == ["/get_server_info", "/server_info"]
    assert revealed.sources == {"/get_server_info": "404", "/server_info": "200"}
    assert revealed.facts["tp"] == "2" and "SECRET" not in revealed.model_dump_json()


async def test_sglang_answering_neither_path_reveals_nothing_but_where_it_asked() -> None:
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(401)})
    assert revealed.facts == {} and revealed.version is None
    assert revealed.sources == {"/get_server_info": "401", "/server_info": "404"}


@pytest.mark.parametrize(("changes", "facts"), [
    ({"speculative_algorithm": None, "expert_distribution_recorder_mode": None},
     {"speculation": "off", "expert_load": "off"}),
    ({"speculative_algorithm": "EAGLE3", "quantization": "w8a8_int8", "kv_cache_dtype": "fp8_e4m3"},
     {"speculation": "eagle3", "weights": "int8", "kv_cache": "fp8"}),
    ({"speculative_algorithm": "NEXTN"}, {"speculation": "mtp"}),
    ({"speculative_algorithm": "LOOKAHEAD"}, {"speculation": "lookahead"}),
])
async def test_sglang_arguments_are_spelled_as_the_matrix_does(changes: dict[str, Any], facts: dict[str, str]) -> None:
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(200, json={**SGLANG_INFO, **changes})})
    assert {fact: revealed.facts[fact] for fact in facts} == facts


async def test_sglang_without_the_recorder_argument_says_nothing_of_expert_load() -> None:
    info = {k: v for k, v in SGLANG_INFO.items() if k != "expert_distribution_recorder_mode"}
    revealed = await reveal(reveal_sglang, {"/get_server_info": httpx.Response(200, json=info)})
    assert "expert_load" not in revealed.facts


async def test_an_unknown_engine_reveals_nothing_and_asks_nothing() -> None:
    asked: list[str] = []
    revealed = await reveal(reveal_nothing, {}, parse_exposition(VLLM_METRICS), asked=asked)
    assert revealed.facts == {} and revealed.sources == {} and asked == []
