"""Workload → the exact requests a cell sends: prompts and output lengths, planned before any timing starts.

This module owns ``PlannedRequest`` and the registry from a workload's ``kind`` to the module that makes its
prompts, imported on first use (the dataset kind pulls in ``datasets``; nobody else should pay for that). It knows
nothing of HTTP or timing; the client turns a ``PlannedRequest`` into a request body.

Prompts are deterministic: request ``i`` of a workload is the same on every run, seeded by ``(workload.seed, i)``
alone, so it does not depend on how many requests are planned. Warm-up requests draw from a separate stream, so a
warm-up never sends a measured prompt (which would warm the prefix cache for it). Indices come in blocks of
``PROMPT_BLOCK``: a cell's measured prompts start at a block boundary (``pipeline.prompt_offset``), and kinds whose
requests share something (the shared-prefix kind's prefixes) share it within a block only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.config.workloads import WorkloadModel
from harness.errors import ConfigError

Api = Literal["completions", "chat"]
PROMPT_BLOCK = 1_000_000


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request ready to send: what to ask and how long an answer to ask for."""

    index: int
    warmup: bool
    api: Api
    prompt: tuple[int, ...] | str
    """Token ids for the completions API (exact length); text for chat (one user message, unless ``messages``)."""
    input_tokens: int
    """Planned prompt length in tokens."""
    max_tokens: int
    temperature: float = 0.0
    ignore_eos: bool = True
    tools: tuple[dict[str, Any], ...] = ()
    """OpenAI ``tools`` (function definitions) sent with a chat request; none when empty."""
    tool_choice: str | None = None
    messages: tuple[dict[str, Any], ...] = ()
    """A whole chat conversation to send instead of one user message (an agent session's turn)."""
    session: int | None = None
    turn: int | None = None
    due_s: float | None = None
    """When to send it, seconds after the measured phase starts (a trace's own timing); None: as the load pattern
    says."""


PromptMaker = Callable[[Any, int, Path | None, int, bool], list[PlannedRequest]]
"""(workload, count, tokenizer_dir, offset, warmup) -> requests offset .. offset+count-1."""

PROMPT_MAKERS: Mapping[str, str] = {
    "random": "harness.load.random_prompts:random_requests",
    "dataset": "harness.load.dataset_prompts:dataset_requests",
    "shared-prefix": "harness.load.shared_prefix_prompts:shared_prefix_requests",
    "tool-calls": "harness.load.tool_call_prompts:tool_call_requests",
    "agent": "harness.load.agent_prompts:agent_warmup_requests",
    "trace": "harness.load.trace_prompts:trace_requests",
}
"""kind -> "module:function" of its prompt maker."""


def prompt_maker(kind: str) -> PromptMaker:
    try:
        module_name, _, function = PROMPT_MAKERS[kind].partition(":")
    except KeyError:
        raise ConfigError("workload", "kind", f"no prompt maker for kind {kind!r}",
                          f"use one of: {', '.join(sorted(PROMPT_MAKERS))}") from None
    maker: PromptMaker = getattr(importlib.import_module(module_name), function)
    return maker


def make_requests(
    workload: WorkloadModel, count: int, tokenizer_dir: Path | None, *, offset: int = 0, warmup: bool = False
) -> list[PlannedRequest]:
    """Plan requests ``offset .. offset+count-1`` of a workload (the warm-up stream when ``warmup``)."""
    return prompt_maker(workload.kind)(workload, count, tokenizer_dir, offset, warmup)
