"""Each engine's reading of what its server says about itself (``harness.servers.revealed``), declared on its adapter
(``Runtime.revealer``) as its metric names and argv are.

Read on vLLM 0.32.0's and SGLang 0.5.23's CPU servers here (docs/deployments.md): vLLM reveals its version
(``/version``) and its cache configuration as the labels of the ``vllm:cache_config_info`` gauge (nothing in it names
TP, EP, quantization or speculation unless the server runs in dev mode); SGLang's ``/get_server_info`` (``/server_info``
on newer builds, the old path kept as an alias) returns its whole server arguments, its own API keys among them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from harness.servers.prometheus import MetricsSnapshot
from harness.servers.revealed import Revealed, kv_cache_from, scrubbed, weights_from

Revealer = Callable[[httpx.AsyncClient, str, MetricsSnapshot | None], Awaitable[Revealed]]

SGLANG_KEPT = ("tp_size", "dp_size", "ep_size", "pp_size", "quantization", "dtype", "kv_cache_dtype",
               "speculative_algorithm", "speculative_num_steps", "speculative_num_draft_tokens",
               "speculative_eagle_topk", "enable_dp_attention", "expert_distribution_recorder_mode",
               "moe_a2a_backend", "context_length", "max_running_requests", "chunked_prefill_size",
               "disable_radix_cache", "grammar_backend", "tool_call_parser", "model_path", "served_model_name",
               "version")
"""SGLang's server arguments kept in the lock (of 556 in 0.5.23): what decides what is measured."""

SGLANG_ALGORITHMS = {"NGRAM": "ngram", "NEXTN": "mtp", "EAGLE": "eagle", "EAGLE3": "eagle3",
                     "STANDALONE": "draft_model"}


async def _get_json(client: httpx.AsyncClient, url: str, sources: dict[str, str]) -> Any:
    path = httpx.URL(url).path
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        sources[path] = f"unreachable ({type(exc).__name__})"
        return None
    sources[path] = str(response.status_code)
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        sources[path] = f"{response.status_code}, not JSON"
        return None


async def reveal_vllm(client: httpx.AsyncClient, base_url: str, metrics: MetricsSnapshot | None) -> Revealed:
    """vLLM: its version, and the KV-cache dtype and prefix caching from ``vllm:cache_config_info``'s labels."""
    sources: dict[str, str] = {}
    answer = await _get_json(client, f"{base_url}/version", sources)
    version = str(answer.get("version")) if isinstance(answer, dict) and answer.get("version") else None
    facts: dict[str, str] = {}
    config: dict[str, Any] = {}
    if metrics is not None:
        for (name, labels), _ in metrics.samples.items():
            if name == "vllm:cache_config_info":
                config = scrubbed(dict(labels))
                facts["kv_cache"] = kv_cache_from(config.get("cache_dtype"))
                sources["/metrics vllm:cache_config_info"] = "found"
                break
        else:
            sources["/metrics vllm:cache_config_info"] = "absent"
    return Revealed(version=version, facts=facts, config=config, sources=sources)


async def reveal_sglang(client: httpx.AsyncClient, base_url: str, metrics: MetricsSnapshot | None) -> Revealed:
    """SGLang: its server arguments from ``/get_server_info`` (``/server_info`` where the old path is gone)."""
    sources: dict[str, str] = {}
    info = await _get_json(client, f"{base_url}/get_server_info", sources)
    if not isinstance(info, dict):
        info = await _get_json(client, f"{base_url}/server_info", sources)
    if not isinstance(info, dict):
        return Revealed(sources=sources)
    info = scrubbed(info)
    config = {key: info[key] for key in SGLANG_KEPT if key in info}
    facts = {"weights": weights_from(info.get("quantization"), info.get("dtype")),
             "kv_cache": kv_cache_from(info.get("kv_cache_dtype"))}
    for fact, key in (("tp", "tp_size"), ("dp", "dp_size"), ("ep", "ep_size")):
        if info.get(key) is not None:
            facts[fact] = str(info[key])
    algorithm = info.get("speculative_algorithm")
    facts["speculation"] = "off" if not algorithm else SGLANG_ALGORITHMS.get(str(algorithm).upper(),
                                                                             str(algorithm).lower())
    if "expert_distribution_recorder_mode" in info:
        facts["expert_load"] = "on" if info["expert_distribution_recorder_mode"] else "off"
    version = info.get("version")
    return Revealed(version=str(version) if version else None, facts=facts, config=config, sources=sources)


async def reveal_nothing(client: httpx.AsyncClient, base_url: str, metrics: MetricsSnapshot | None) -> Revealed:
    """An engine the harness does not know reveals nothing beyond ``/v1/models``."""
    return Revealed()
