"""The ``tool-calls`` workload's prompts: a question plus the function definitions an agent would be offered.

Request ``i`` asks the question of one catalog entry and offers that entry's function among
``tools_per_request`` definitions (the rest drawn from the catalog, order shuffled), as OpenAI ``tools`` with the
workload's ``tool_choice``. Prompt length is the question's tokens; the tool definitions the chat template
renders come on top, so ``usage.prompt_tokens`` is the truth for what the server prefilled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.config.workloads import ToolCallsWorkload
from harness.errors import ConfigError
from harness.load.prompts import PlannedRequest, WorkloadKind
from harness.load.tool_catalog import BUILTIN, CatalogEntry, to_openai_tool
from harness.load.vocabulary import load_vocabulary

CATALOGS: dict[str, tuple[CatalogEntry, ...]] = {"builtin": BUILTIN}


def tool_call_requests(
    workload: ToolCallsWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    catalog = CATALOGS[workload.catalog]
    if workload.tools_per_request > len(catalog):
        raise ConfigError("workload", "tools_per_request", f"the {workload.catalog} catalog holds "
                          f"{len(catalog)} functions, fewer than {workload.tools_per_request}",
                          f"use tools_per_request <= {len(catalog)}")
    vocab = load_vocabulary(tokenizer_dir) if tokenizer_dir is not None else None
    tools = [to_openai_tool(entry.function) for entry in catalog]
    stream = 1 if warmup else 0
    planned = []
    for index in range(offset, offset + count):
        rng = np.random.default_rng((workload.seed, stream, index))
        offered = rng.permutation(len(catalog))[:workload.tools_per_request]
        asked = int(offered[rng.integers(0, len(offered))])
        question = catalog[asked].question
        planned.append(PlannedRequest(
            index=index, warmup=warmup, api="chat", prompt=question,
            input_tokens=vocab.count(question) if vocab is not None else len(question.split()),
            max_tokens=workload.output_tokens, temperature=workload.temperature, ignore_eos=workload.ignore_eos,
            tools=tuple(tools[int(i)] for i in offered), tool_choice=workload.tool_choice,
        ))
    return planned


class ToolCallsKind(WorkloadKind[ToolCallsWorkload]):
    """Independent chat requests that offer function definitions."""

    name = "tool-calls"
    model = ToolCallsWorkload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return tool_call_requests(self.workload, count, tokenizer_dir, offset, warmup)
