"""The torch-profiler path, on a trace a real vLLM CPU server wrote (see data/README.md)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.profiling.torch_trace import (
    TraceError,
    find_traces,
    load_trace,
    self_times,
    summarize_traces,
    trace_entries,
)

DATA = Path(__file__).parent / "data"
WORKER_TABLE = DATA / "dp0_pp0_tp0_dcp0_ep0_rank0.profiler_out.txt"


def torch_key_averages() -> tuple[dict[str, tuple[float, int]], float]:
    """Self CPU ms and calls per op from torch's own table of the same capture, and its total."""
    rows = {}
    text = WORKER_TABLE.read_text()
    for line in text.splitlines():
        m = re.match(r"^\s*(.+?)\s{2,}[\d.]+%\s+([\d.]+)(ms|us)\s+[\d.]+%\s+[\d.]+[mu]?s\s+[\d.]+[mu]?s\s+(\d+)\s*$",
                     line)
        if m:
            ms = float(m.group(2)) / (1 if m.group(3) == "ms" else 1000)
            rows[m.group(1)] = (ms, int(m.group(4)))
    total = re.search(r"Self CPU time total: ([\d.]+)ms", text)
    assert total and len(rows) > 40
    return rows, float(total.group(1))


def test_finds_worker_traces_and_leaves_the_frontend_out() -> None:
    workers = find_traces(DATA)
    assert [p.name.split(".")[0] for p in workers] == ["dp0_pp0_tp0_dcp0_ep0_rank0"]
    assert len(find_traces(DATA, include_frontend=True)) == 2


def test_self_times_match_torch_key_averages() -> None:
    table = summarize_traces(find_traces(DATA), top_n=50)
    expected, total_ms = torch_key_averages()
    assert table.source == "torch_cpu"
    assert table.total_ms == pytest.approx(total_ms, abs=0.01)
    for row in table.top:
        ms, calls = expected[row.name]
        assert row.total_ms == pytest.approx(ms, abs=0.002), row.name
        assert row.calls == calls, row.name


def test_the_real_window_groups_moe_and_attention() -> None:
    table = summarize_traces(find_traces(DATA))
    by_name = {r.name: r for r in table.top}
    assert by_name["_C::cpu_fused_moe"].group == "moe_gemm"
    assert by_name["vllm::unified_attention_with_output"].group == "attention"
    assert table.share("moe_gemm") == pytest.approx(1.69, abs=0.01)
    assert table.share("attention") == pytest.approx(8.94, abs=0.01)
    assert table.share("communication") == 0.0  # one rank: no collectives
    assert sum(g.share_pct for g in table.groups) == pytest.approx(100)
    assert len(table.top) == 15


def test_the_frontend_trace_has_no_ops() -> None:
    frontend = [p for p in find_traces(DATA, include_frontend=True) if ".async_llm." in p.name]
    assert summarize_traces(frontend).total_ms == 0


def _event(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_self_time_subtracts_direct_children_only() -> None:
    events = [_event("step", 0, 100, "user_annotation"), _event("aten::linear", 10, 50), _event("aten::addmm", 15, 40),
              _event("aten::copy_", 20, 10), _event("aten::add", 70, 20), _event("aten::add", 0, 30, tid=2)]
    got = self_times(events)
    assert got == {"step": (30.0, 1), "aten::linear": (10.0, 1), "aten::addmm": (30.0, 1), "aten::copy_": (10.0, 1),
                   "aten::add": (50.0, 2)}


def test_gpu_kernels_take_precedence_over_host_ops() -> None:
    trace = {"traceEvents": [_event("aten::mm", 0, 100), _event("sm90_gemm", 5, 40, "kernel"),
                             _event("fused_moe_kernel", 50, 30, "kernel"),
                             _event("fused_moe_kernel", 90, 10, "kernel")]}
    source, entries = trace_entries(trace)
    assert source == "torch_gpu"
    assert sorted(entries) == [("fused_moe_kernel", 40_000.0, 2), ("sm90_gemm", 40_000.0, 1)]


def test_plain_json_traces_load_and_broken_ones_raise(tmp_path: Path) -> None:
    plain = tmp_path / "w.1.pt.trace.json"
    plain.write_text(json.dumps({"traceEvents": [_event("aten::mm", 0, 5)]}))
    assert summarize_traces([plain]).total_ms == pytest.approx(0.005)
    truncated = tmp_path / "w.2.pt.trace.json.gz"
    truncated.write_bytes(gzip.compress(b'{"traceEvents": [')[:-4])
    with pytest.raises(TraceError, match="w.2.pt.trace.json.gz"):
        load_trace(truncated)
    with pytest.raises(TraceError, match="no torch profiler trace"):
        summarize_traces([])
