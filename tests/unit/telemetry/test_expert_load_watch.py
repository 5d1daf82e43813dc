"""The expert-load stage: the rows a cell's requests should route, a collector reset when the measured load starts
and read when it ends, and a collector that fails costing the cell its counts, never the cell."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from harness.config import load_matrix
from harness.errors import ServerLost
from harness.load import RequestRecord
from harness.load.records import ErrorInfo
from harness.plan import expand
from harness.servers.expert_load_collectors import EngineExpertLoad, ExpertCounts
from harness.servers.vllm import VllmRuntime
from harness.telemetry import ExpertLoadWatch, expert_load_watch, read_expert_load
from harness.telemetry.expert_load_watch import expected_rows, model_top_k


def record(prompt: int | None, output: int, *, cached: int | None = None, warmup: bool = False,
           failed: bool = False, planned: int = 10) -> RequestRecord:
    return RequestRecord(index=0, warmup=warmup, input_tokens=planned, max_tokens=output, send_time=0.0, end_time=1.0,
                         output_tokens=output, prompt_tokens=prompt, cached_tokens=cached,
                         error=ErrorInfo("http_status", "boom", 500) if failed else None)


def test_expected_rows_are_computed_tokens_less_the_last_of_each_request() -> None:
    records = [record(64, 16), record(64, 16, cached=32), record(None, 8, planned=20),
               record(64, 16, warmup=True), record(64, 0, failed=True)]
    # 64+16-1, 64-32+16-1, 20+8-1 (the planned length where the server did not count); warm-up and failures out
    assert expected_rows(records) == (79 + 47 + 27, 3)


class Recorded(EngineExpertLoad):
    """A collector that answers from memory, or fails where told."""

    def __init__(self, fail_reset: bool = False, fail_read: bool = False) -> None:
        self.fail_reset, self.fail_read = fail_reset, fail_read
        self.calls: list[str] = []

    def server_args(self) -> list[str]:
        return []

    def server_env(self, port: int) -> dict[str, str]:
        return {}

    async def reset(self, client: httpx.AsyncClient, base_urls: Sequence[str]) -> None:
        self.calls.append("reset")
        if self.fail_reset:
            raise httpx.ConnectError("refused")

    async def read(self, client: httpx.AsyncClient, base_urls: Sequence[str], top_k: int | None,
                   dump_dir: Path | None = None) -> ExpertCounts:
        self.calls.append("read")
        if self.fail_read:
            raise ServerLost("no rank answered")
        return ExpertCounts(collector="recorded", layers=(0,), experts=2, top_k=top_k, counts=((100, 58),),
                            rows=(79,), hook_seconds=0.2)


@pytest.mark.parametrize(("collector", "reason"), [
    (Recorded(), None),
    (Recorded(fail_reset=True), "could not be reset"),
    (Recorded(fail_read=True), "could not be read"),
])
def test_a_watch_writes_counts_or_why_there_are_none(collector: Recorded, reason: str | None,
                                                     tmp_path: Path) -> None:
    watch = ExpertLoadWatch(collector, ("http://127.0.0.1:1",), top_k=2)
    path = tmp_path / "expert_load.json"

    async def cell() -> None:
        await watch.start()
        await watch.finish("m/c1", [record(64, 16)], 4.0, path)

    asyncio.run(cell())
    stored = read_expert_load(path)
    assert stored is not None and stored.expected_rows == 79 and stored.requests == 1
    if reason is None:
        assert stored.counts is not None and stored.counts.top_k == 2 and stored.overhead == pytest.approx(0.05)
        assert collector.calls == ["reset", "read"]
    else:
        assert stored.counts is None and reason in (stored.reason or "") and stored.overhead is None
    assert read_expert_load(tmp_path / "absent.json") is None


def test_a_watch_only_where_asked_and_the_engine_has_a_collector(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({"name": "t", "models": {"m": {"id": str(tmp_path)}}, "workloads": {
        "w": {"kind": "random", "input_tokens": 8, "output_tokens": 4, "num_requests": 2}},
        "axes": {"runtime": ["vllm", "fake"]}, "telemetry": {"expert_load": True}}))
    (tmp_path / "config.json").write_text(json.dumps({"num_experts_per_tok": 8}))
    plan = expand(load_matrix(path), source=str(path))
    by_runtime = {g.server.runtime: g.server for g in plan.groups}
    watch = expert_load_watch(by_runtime["vllm"], VllmRuntime(), ["http://127.0.0.1:1"])
    assert watch is not None and watch.top_k == 8 and model_top_k(by_runtime["vllm"]) == 8
    from harness.servers import get_runtime
    assert expert_load_watch(by_runtime["fake"], get_runtime("fake"), ["u"]) is None  # the fake has no collector
    off = by_runtime["vllm"].model_copy(update={"expert_load": False})
    assert expert_load_watch(off, VllmRuntime(), ["u"]) is None
    assert off.server_id == by_runtime["vllm"].server_id  # the switch does not rename the cells measured before
