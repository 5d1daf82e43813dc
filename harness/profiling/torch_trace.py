"""Torch profiler Chrome traces (what vLLM's ``--profiler-config '{"profiler":"torch",...}'`` writes) → op self times.

vLLM 0.32 writes one ``<worker>.<time_ns>.pt.trace.json[.gz]`` per engine worker (worker names like
``dp0_pp0_tp0_dcp0_ep0_rank0``) and, unless ``ignore_frontend`` is set, one ``<host>_<pid>.async_llm.*`` for the
API process, through ``torch.profiler.tensorboard_trace_handler``. Next to each it writes
``<worker>.profiler_out.txt``, torch's own key-averages table (self CPU time, top 50 rows).

Self time here is computed the way torch's ``key_averages`` computes it: an event's duration minus the durations
of its direct children on the same thread, over ``cpu_op`` events (aten / custom ops) and ``user_annotation``
events (``record_function`` ranges such as vLLM's ``execute_context_*`` step annotations, whose self time is the
Python overhead between ops). With CUDA activity recorded, GPU ``kernel`` events are taken instead: their
duration is device time, and that is what the GPU table ranks.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.profiling.table import ProfileTable, TableSource, build_table

TRACE_GLOB = "*.trace.json*"
"""vLLM's ``<worker>.<time_ns>.pt.trace.json.gz`` and SGLang's ``<prefix>-<profile id>-TP-<rank>.trace.json.gz``."""
FRONTEND_MARK = ".async_llm."
"""The API process's trace: front-end CPU work only, not the engine step."""

_HOST_CATEGORIES = frozenset({"cpu_op", "user_annotation"})
_DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


class TraceError(ValueError):
    """A file that is not a readable torch profiler Chrome trace."""


def load_trace(path: Path) -> dict[str, Any]:
    """The trace's JSON object, gzip or plain."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path.name}: not a readable Chrome trace ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{path.name}: no traceEvents list")
    return data


def _complete_events(trace: dict[str, Any], categories: frozenset[str]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"
            and e.get("cat") in categories and isinstance(e.get("dur"), int | float)]


def self_times(events: Iterable[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """Per name: (summed self time in µs, calls), nesting resolved per (pid, tid) by timestamps."""
    threads: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        threads[(event.get("pid"), event.get("tid"))].append(event)
    self_us: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)

    def close(stack: list[list[Any]]) -> None:
        _, name, dur, children = stack.pop()
        self_us[name] += max(0.0, dur - children)
        calls[name] += 1
        if stack:
            stack[-1][3] += dur

    for thread_events in threads.values():
        # Parents first at equal start: the longer event encloses the shorter.
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[list[Any]] = []  # open events: [end_us, name, dur_us, children_us]
        for event in thread_events:
            while stack and event["ts"] >= stack[-1][0]:
                close(stack)
            stack.append([event["ts"] + event["dur"], str(event["name"]), float(event["dur"]), 0.0])
        while stack:
            close(stack)
    return {name: (self_us[name], calls[name]) for name in self_us}


def trace_entries(trace: dict[str, Any]) -> tuple[TableSource, list[tuple[str, float, int]]]:
    """``(name, total_ns, calls)`` for one trace: GPU kernels when it has any, else CPU op self times."""
    device = _complete_events(trace, _DEVICE_CATEGORIES)
    if device:
        totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for event in device:
            totals[str(event["name"])][0] += float(event["dur"])
            totals[str(event["name"])][1] += 1
        return "torch_gpu", [(name, us * 1e3, int(n)) for name, (us, n) in totals.items()]
    host = self_times(_complete_events(trace, _HOST_CATEGORIES))
    return "torch_cpu", [(name, us * 1e3, n) for name, (us, n) in host.items()]


def find_traces(directory: Path, include_frontend: bool = False) -> list[Path]:
    """Trace files under ``directory``, engine workers only unless ``include_frontend``."""
    paths = sorted(p for p in directory.glob(TRACE_GLOB) if p.is_file())
    return [p for p in paths if include_frontend or FRONTEND_MARK not in p.name]


def summarize_traces(paths: Sequence[Path], top_n: int = 15) -> ProfileTable:
    """One table over every worker trace given (their ops summed by name)."""
    if not paths:
        raise TraceError("no torch profiler trace files to summarize")
    per_trace = [trace_entries(load_trace(path)) for path in paths]
    # Device time and host self time are different quantities: never sum one into the other's shares.
    source: TableSource = "torch_gpu" if any(s == "torch_gpu" for s, _ in per_trace) else "torch_cpu"
    entries = [entry for s, rows in per_trace if s == source for entry in rows]
    return build_table(entries, source=source, top_n=top_n)
