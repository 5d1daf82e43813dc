"""The expert-load collectors' HTTP side against recorded engines (httpx.MockTransport): vLLM's answers per rank
pooled (tensor-parallel ranks once, data-parallel ranks added), SGLang's dumps read, summed over forward passes and
servers, and removed; the collectors' refusals before launch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch

from harness.config import load_matrix
from harness.errors import ConfigError, ServerLost
from harness.plan import expand
from harness.servers.expert_load_collectors import (
    SGLANG_PLUGIN_DIR,
    VLLM_EXTENSION_DIR,
    SglangExpertLoad,
    VllmExpertLoad,
    pooled,
    sglang_dump_dir,
)


def vllm_answer(tp: int, dp: int, counts: list[list[int]], hook: float = 0.5) -> dict[str, Any]:
    return {"layers": [0, 1], "experts": 3, "top_k": 2, "counts": counts, "rows": [sum(c) // 2 for c in counts],
            "hook_seconds": hook, "hook_calls": 4, "tp_rank": tp, "dp_rank": dp, "engine": "vllm 0.32.0"}


def read(collector: Any, handler: Any, urls: list[str], top_k: int | None = 2) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await collector.reset(client, urls)
            return await collector.read(client, urls, top_k)
    return asyncio.run(go())


def test_vllm_counts_one_tensor_parallel_rank_and_adds_data_parallel_ranks() -> None:
    calls: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        method = json.loads(request.content)["method"]
        calls.append((str(request.url), method))
        if method == "expert_load_reset":
            return httpx.Response(200, json={"results": [{"layers": 2}] * 3})
        return httpx.Response(200, json={"results": [
            vllm_answer(0, 0, [[2, 1, 1], [4, 0, 0]]), vllm_answer(1, 0, [[2, 1, 1], [4, 0, 0]]),  # TP twin
            vllm_answer(0, 1, [[0, 3, 1], [0, 2, 2]], hook=0.25)]})

    counts = read(VllmExpertLoad(), handler, ["http://127.0.0.1:9000"])
    assert calls == [("http://127.0.0.1:9000/collective_rpc", "expert_load_reset"),
                     ("http://127.0.0.1:9000/collective_rpc", "expert_load_read")]
    assert counts.counts == ((2, 4, 2), (4, 2, 2)) and counts.rows == (4, 4) and counts.ranks == 2
    assert counts.hook_seconds == pytest.approx(0.75) and counts.layers == (0, 1) and counts.top_k == 2
    assert "0.32.0" in counts.collector


def test_vllm_launch_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    collector = VllmExpertLoad()
    assert collector.server_args() == ["--worker-extension-cls", "harness_vllm_expert_load.ExpertLoadWorker"]
    env = collector.server_env(8000)
    assert env["VLLM_SERVER_DEV_MODE"] == "1"
    assert env["PYTHONPATH"].split(":") == [str(VLLM_EXTENSION_DIR), "/elsewhere"]  # the user's path kept, after
    assert (VLLM_EXTENSION_DIR / "harness_vllm_expert_load.py").is_file()


def write_dump(path: Path, per_pass: list[list[list[int]]], seconds: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    dump: dict[str, Any] = {"rank": 0, "logical_count": torch.tensor(per_pass, dtype=torch.int32),
                            "average_utilization_rate_over_window": None}
    if seconds is not None:  # the project's plugin clocked the recorder (engines/sglang_expert_load)
        dump["harness_hook_seconds"] = seconds
    torch.save(dump, path)


def test_sglang_dumps_are_summed_over_passes_and_servers_then_removed() -> None:
    urls = ["http://127.0.0.1:9101", "http://127.0.0.1:9102"]
    # a dense first layer (a DeepSeek model's) routes nothing and is left out; two passes per server
    dumps = {9101: [[[0, 0, 0], [2, 1, 1], [1, 1, 2]], [[0, 0, 0], [0, 2, 0], [1, 0, 1]]],
             9102: [[[0, 0, 0], [1, 1, 0], [0, 2, 0]]]}
    for port in dumps:
        write_dump(sglang_dump_dir(port) / "expert_distribution_recorder_0.pt", [[[9, 9, 9]] * 3])  # stale
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/dump_expert_distribution_record":
            assert not list(sglang_dump_dir(request.url.port or 0).glob("*.pt"))  # the stale dump went first
            write_dump(sglang_dump_dir(request.url.port or 0) / "expert_distribution_recorder_1.pt",
                       dumps[request.url.port or 0])
        return httpx.Response(200, text="ok")

    counts = read(SglangExpertLoad(), handler, urls)
    assert seen == ["/start_expert_distribution_record"] * 2 + [
        "/stop_expert_distribution_record", "/dump_expert_distribution_record"] * 2
    assert counts.layers == (1, 2) and counts.counts == ((3, 4, 1), (2, 3, 3)) and counts.rows == (4, 4)
    assert counts.ranks == 2 and counts.hook_seconds is None
    assert not any(sglang_dump_dir(port).exists() for port in dumps)


def test_sglang_recorder_clocks_are_added_over_servers() -> None:
    urls = ["http://127.0.0.1:9106", "http://127.0.0.1:9107"]

    def handler(request: httpx.Request) -> httpx.Response:
        port = request.url.port or 0
        if request.url.path == "/dump_expert_distribution_record":
            write_dump(sglang_dump_dir(port) / "expert_distribution_recorder_1.pt", [[[1, 1, 0]]],
                       seconds=0.25 if port == 9106 else 0.5)
        return httpx.Response(200, text="ok")

    assert read(SglangExpertLoad(), handler, urls).hook_seconds == 0.75


def test_sglang_without_a_dump_is_a_lost_read() -> None:
    with pytest.raises(ServerLost, match="expected one expert distribution dump"):
        read(SglangExpertLoad(), lambda request: httpx.Response(200, text="ok"), ["http://127.0.0.1:9103"])
    assert not sglang_dump_dir(9103).exists()  # a failed read leaves no directory behind


def test_sglang_names_its_dump_directory_by_port_and_finds_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = SglangExpertLoad().server_env(9104)
    assert env == {"SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR": str(sglang_dump_dir(9104)),
                   "HARNESS_EXPERT_LOAD_TIMING": "1", "PYTHONPATH": f"{SGLANG_PLUGIN_DIR}:/elsewhere"}
    assert "9104" in sglang_dump_dir(9104).name and sglang_dump_dir(9104) != sglang_dump_dir(9105)


def test_pooling_aligns_layers_and_keeps_an_untimed_rank_untimed() -> None:
    from harness.servers.expert_load_collectors import RankCounts

    a = RankCounts(layers=(3, 5), experts=2, top_k=1, counts=((1, 0), (0, 1)), rows=(1, 1), hook_seconds=0.1)
    b = RankCounts(layers=(5,), experts=2, top_k=1, counts=((2, 2),), rows=(4,), hook_seconds=None)
    counts = pooled("c", [a, b])
    assert counts.counts == ((1, 0), (2, 3)) and counts.rows == (1, 5) and counts.hook_seconds is None
    with pytest.raises(ServerLost):
        pooled("c", [])


MATRIX = """
name: t
models:
  m: {id: "fixture:tiny-qwen3-moe"}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4}
telemetry: {expert_load: true}
"""


@pytest.mark.parametrize(("runtime", "problem"), [
    ({"image": "vllm/vllm-openai@sha256:" + "0" * 64}, "container image"),
    ({"extra_args": ["--worker-extension-cls", "mine.Ext"]}, "names one already"),
])
def test_vllm_collector_refuses_what_it_cannot_run_beside(runtime: dict[str, Any], problem: str,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX + f"runtimes: {{vllm: {json.dumps(runtime)}}}\n")
    (group,) = expand(load_matrix(path), source=str(path)).groups
    with pytest.raises(ConfigError, match=problem) as caught:
        VllmExpertLoad().check(group.server, str(path))
    assert caught.value.key == "telemetry.expert_load"


EPLB_LOG = """\
(Worker_TP0_EP0 pid=812) INFO 11-28 10:00:01 [eplb_state.py:631] EPLB step: 7 for model DeepseekV3ForCausalLM: \
avg_tokens=1000.00, max_tokens=1250, balancedness=0.8000, steps until the next rearrangement: 2993
(APIServer pid=700) INFO 11-28 10:00:01 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s
(Worker_TP0_EP0 pid=812) INFO 11-28 10:00:02 [eplb_state.py:631] EPLB step: 8 for model DeepseekV3ForCausalLM: \
avg_tokens=500.00, max_tokens=1000, balancedness=0.5000, steps until the next rearrangement: 2992
"""


def test_vllm_eplb_balance_is_read_from_its_log_per_rank_not_per_expert() -> None:
    found = VllmExpertLoad().logged_balance(EPLB_LOG)
    assert found is not None and found.steps == 2 and found.worst == 0.5
    assert found.balancedness == pytest.approx(1500 / 2250)  # tokens pooled over the steps, not a mean of ratios
    assert VllmExpertLoad().logged_balance("no balancer here") is None
    assert SglangExpertLoad().logged_balance(EPLB_LOG) is None
