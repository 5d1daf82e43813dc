"""The time SGLang's expert distribution recorder spends counting, measured inside SGLang's scheduler.

SGLang's recorder (``--expert-distribution-recorder-mode stat``) counts the experts each MoE layer routed to, but
says nothing of its own cost. This module is a general plugin of SGLang (entry-point group ``sglang.srt.plugins``,
declared by the ``*.dist-info`` folder beside it; the harness puts this directory on the server's ``PYTHONPATH``,
where ``importlib.metadata`` finds that folder). SGLang loads its general plugins in every process it starts,
scheduler included, and ``register`` wraps the recorder's three per-step entry points in a clock through SGLang's own
hook registry: the start and end of each recorded forward pass (``_on_forward_pass_start``, ``_on_forward_pass_end``:
zeroing the pass's counters, then appending them to the accumulator) and each layer's count (``_on_hook``, which
``on_select_experts`` calls). The seconds since the last ``_reset`` (which ``start_expert_distribution_record`` and
every dump call) go into the dump file as ``harness_hook_seconds``. Under tensor parallelism only rank 0 writes the
dump, so its clock is the one kept (every rank routes the same rows).

It does nothing unless the harness asks (``HARNESS_EXPERT_LOAD_TIMING=1`` in the server's environment), so an SGLang
environment that finds it on its path for another reason runs unchanged. On a CPU the recorder's ops run as they are
called, so the clock is their cost; on a GPU the clock sees the host's time to launch them, not the kernels'.
Checked against SGLang 0.5.23 (``SGLANG_VERSION``); ``tests/contract`` reads SGLang's source for every name used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

SGLANG_VERSION = "0.5.23"
"""The SGLang release whose recorder and hook registry this module was checked against."""
ENABLE_ENV = "HARNESS_EXPERT_LOAD_TIMING"
RECORDER = "sglang.srt.eplb.expert_distribution"
REAL = f"{RECORDER}._ExpertDistributionRecorderReal"
TIMED = ("_on_forward_pass_start", "_on_forward_pass_end", "_on_hook")
"""The recorder's methods that run at every forward pass or MoE layer."""
DUMP_KEY = "harness_hook_seconds"

_clock = {"seconds": 0.0}
"""This process's recorder time since the last reset."""


def timed(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """An AROUND hook: the recorder's own call, with its time added to the clock."""
    start = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        _clock["seconds"] += time.perf_counter() - start


def reset_clock(result: Any, *args: Any, **kwargs: Any) -> None:
    """An AFTER hook on the recorder's reset: a new recording starts its clock at zero."""
    _clock["seconds"] = 0.0


def stamp_dump(name: str, data: dict[str, Any]) -> None:
    """A BEFORE hook on the dump's write: the clock goes into the file beside the counts."""
    data[DUMP_KEY] = _clock["seconds"]


def register() -> None:
    """SGLang's entry point: register the hooks when the harness asked for them (SGLang applies them after every
    plugin has registered)."""
    if os.environ.get(ENABLE_ENV) != "1":
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    for method in TIMED:
        HookRegistry.register(f"{REAL}.{method}", timed, HookType.AROUND)
    HookRegistry.register(f"{REAL}._reset", reset_clock, HookType.AFTER)
    HookRegistry.register(f"{RECORDER}._dump_to_file", stamp_dump, HookType.BEFORE)
