"""A workload kind from outside the package, whole in one file: ``echo`` sends one short fixed chat prompt per
request, numbered so that no two are alike.

Importing this module registers both halves a kind has: its config model (so a matrix accepts ``kind: echo`` with
the same strict checks as a built-in kind) and its ``WorkloadKind`` (its prompts; everything else is the default
of independent requests: counted, paced by the cell's load pattern, "N requests" in the plan, tables only in the
report). ``tests/integration/test_toy_workload_fake.py`` runs a cell through it on the fake server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from harness.config.workloads import WorkloadBase, register_workload_model
from harness.load.prompts import WORKLOAD_KINDS, PlannedRequest, WorkloadKind


@register_workload_model
class EchoWorkload(WorkloadBase):
    """A fixed chat prompt, numbered per request; output capped at ``output_tokens``."""

    kind: Literal["echo"] = "echo"
    text: str = Field("repeat after me", description="the prompt every request sends, before its number")
    output_tokens: int = Field(4, gt=0)

    @property
    def label(self) -> str:
        return f"echo-{self.output_tokens}"


@WORKLOAD_KINDS.register
class EchoKind(WorkloadKind[EchoWorkload]):
    """The prompt as written: no tokenizer needed, its length counted in words."""

    name = "echo"
    model = EchoWorkload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        workload = self.workload
        stream = "warm-up" if warmup else "request"
        prompts = [(index, f"{workload.text} ({stream} {index})") for index in range(offset, offset + count)]
        return [PlannedRequest(index=index, warmup=warmup, api="chat", prompt=prompt,
                               input_tokens=len(prompt.split()), max_tokens=workload.output_tokens,
                               temperature=workload.temperature, ignore_eos=workload.ignore_eos)
                for index, prompt in prompts]
