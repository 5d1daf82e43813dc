"""The machine-speed probe: a fixed amount of the two kinds of work a small-model CPU engine spends its time on,
on every core at once.

A tiny MoE served by vLLM's CPU build spends its step in the Python interpreter (scheduler, API server, detokeniser,
the load client) and in many small single-threaded torch kernels, not in large GEMMs, and its processes spread over
every core. The probe runs one worker per core, each timing a fixed amount of each kind of work several times,
alternating, and keeps each part's median over the trials and the slowest worker: on a machine running at 0.7x of
its usual speed, or with a neighbour taking one core, the parts take about 1/0.7 as long, and so does the engine
(the calibration measurements in the README show how closely). A probe on one core would miss a neighbour on the
other, which is what the first measurement showed. It runs between launches, while no server holds the cores.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from statistics import median

from pydantic import BaseModel, ConfigDict

TRIALS = 3
"""Trials per part: the median of 3 alternating trials survives one disturbed trial; each trial of the torch part
takes about 4.6 s on a CPU without native bf16, and a run probes before and after every round."""
PYTHON_ITERATIONS = 60_000
TORCH_ITERATIONS = 3000


class ProbeResult(BaseModel):
    """One probe: the median seconds of each part over ``TRIALS`` alternating trials on the slowest core, and when
    it ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    python_s: float
    torch_s: float
    trials: int = TRIALS
    workers: int = 1
    """Probe workers run at once, one per core."""

    @property
    def seconds(self) -> float:
        """The probe's cost: geometric mean of the two parts (each part weighs the same, whatever its length)."""
        return float((self.python_s * self.torch_s) ** 0.5)


def python_work(iterations: int = PYTHON_ITERATIONS) -> int:
    """Interpreter-bound work shaped like a server's request handling: dicts, strings, JSON, small lists."""
    total = 0
    for i in range(iterations):
        record = {"id": i, "text": f"token-{i % 97}", "ids": [i, i + 1, i + 2]}
        encoded = json.dumps(record)
        total += len(json.loads(encoded)["text"]) + sum(record["ids"]) % 7  # type: ignore[call-overload]
    return total


def torch_work(iterations: int = TORCH_ITERATIONS) -> float:
    """Small single-threaded bf16 kernels shaped like a tiny MoE's decode step: a projection, a router softmax,
    a top-k, and two expert-sized matmuls."""
    import torch  # the engine's own dependency; imported here so that importing the harness stays light

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(16, 128, generator=generator).to(torch.bfloat16)
        w_in = torch.randn(128, 256, generator=generator).to(torch.bfloat16)
        w_out = torch.randn(256, 128, generator=generator).to(torch.bfloat16)
        router = torch.randn(128, 8, generator=generator).to(torch.bfloat16)
        acc = 0.0
        for _ in range(iterations):
            weights = torch.softmax((x @ router).float(), dim=-1)
            top = torch.topk(weights, 2, dim=-1).values
            hidden = torch.nn.functional.silu(x @ w_in) @ w_out
            acc += float(top[0, 0]) + float(hidden[0, 0])
        return acc
    finally:
        torch.set_num_threads(threads)


def _timed(work: object) -> float:
    start = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - start


def _worker(trials: int) -> tuple[float, float]:
    """One core's share: both parts ``trials`` times, alternating, after one untimed warm-up of each."""
    python_work(PYTHON_ITERATIONS // 10)
    torch_work(TORCH_ITERATIONS // 10)
    python_times, torch_times = [], []
    for _ in range(trials):
        python_times.append(_timed(python_work))
        torch_times.append(_timed(torch_work))
    return median(python_times), median(torch_times)


def probe(at: str, trials: int = TRIALS, workers: int | None = None) -> ProbeResult:
    """Run one probe worker per core (``workers``: default every core this process may use) and keep the slowest
    worker's medians: the machine is as fast as its most contended core."""
    count = workers or len(os.sched_getaffinity(0))
    # fork: the workers inherit the imported torch instead of paying for its import again
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
        results = list(pool.map(_worker, [trials] * count))
    return ProbeResult(at=at, python_s=max(r[0] for r in results), torch_s=max(r[1] for r in results),
                       trials=trials, workers=count)
