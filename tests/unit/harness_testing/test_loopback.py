"""Fault cases end to end: the real client and runner against the loopback server over real sockets.

Every fault is recorded per request with its kind, the cell completes and reports its error rate, and no
exception escapes the load loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import RandomWorkload
from harness.load import LoadSpec, run_load
from harness.metrics import summarize
from harness_testing.loopback import Fault, LoopbackConfig, LoopbackServer


def _spec(url: str, tokenizer_dir: Path, **overrides: object) -> LoadSpec:
    fields: dict[str, object] = dict(
        base_url=url, model="m", concurrency=3, tokenizer_dir=tokenizer_dir, request_timeout_s=10.0, progress=False,
        workload=RandomWorkload(input_tokens=8, output_tokens=6, num_requests=12, warmup_requests=0))
    fields.update(overrides)
    return LoadSpec(**fields)  # type: ignore[arg-type]


async def test_a_clean_run_streams_exact_token_counts(tiny_tokenizer_dir: Path) -> None:
    async with LoopbackServer(LoopbackConfig(itl_ms=1)).serve() as url:
        result = await run_load(_spec(url, tiny_tokenizer_dir))
    measured = [r for r in result.records if not r.warmup]
    assert len(measured) == 12 and all(r.ok for r in measured)
    assert all(r.output_tokens == r.max_tokens == sum(r.chunk_tokens) == len(r.chunk_times) for r in measured)
    assert all(r.prompt_tokens == 8 for r in measured)
    assert result.client is not None and result.client.cpu_util >= 0


@pytest.mark.parametrize(("fault", "kind", "status"), [
    ("http_500", "http_status", 500),
    ("http_429", "http_status", 429),
    ("reset_mid_stream", "stream", None),
    ("cut_stream", "stream", None),
    ("close_before_response", "connection", None),
    ("hang", "timeout", None),
])
async def test_faults_are_records_and_the_cell_completes(
    tiny_tokenizer_dir: Path, fault: Fault, kind: str, status: int | None
) -> None:
    server = LoopbackServer(LoopbackConfig(fault=fault, fault_every=3))
    async with server.serve() as url:
        # only `hang` should time out: a short limit for every fault flaked on a busy 2-core machine
        result = await run_load(_spec(url, tiny_tokenizer_dir, request_timeout_s=0.5 if fault == "hang" else 10.0))
    summary = summarize(result.records, result.duration_s)
    assert summary.requests == 12 and summary.failed == 4 and summary.completed == 8
    assert summary.error_rate == pytest.approx(4 / 12)
    assert summary.error_kinds == {kind: 4}
    failures = [r for r in result.records if r.error is not None]
    assert all(r.error is not None and r.error.status_code == status for r in failures)
    if fault in ("reset_mid_stream", "cut_stream"):
        assert all(len(r.chunk_times) == 3 for r in failures)  # what arrived before the cut is kept


async def test_a_server_that_is_gone_stops_the_sending(tiny_tokenizer_dir: Path) -> None:
    async with LoopbackServer().serve() as url:
        pass  # closed: nothing listens on the port any more
    result = await run_load(_spec(url, tiny_tokenizer_dir, abort_after_connection_errors=4))
    kinds = [r.error.kind for r in result.records if r.error is not None]
    assert len(kinds) == 12 and set(kinds) == {"connection", "not_sent"}
    assert kinds.count("connection") < 8
