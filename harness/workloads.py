"""Workload definitions: what requests a cell sends, independent of how fast it sends them.

The concurrency a cell runs at is an axis, not part of the workload, so that one workload definition serves
every concurrency of a sweep. Each kind is a model told apart by ``kind``; the load generator owns a registry
from kind to the code that makes its prompts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RandomWorkload(BaseModel):
    """Prompts of random token ids with lengths drawn around the targets (vLLM's ``random`` dataset)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["random"] = "random"
    input_tokens: int = Field(gt=0, description="mean prompt length in tokens")
    output_tokens: int = Field(gt=0, description="mean tokens generated per request")
    range_ratio: float = Field(0.0, ge=0, lt=1, description="lengths uniform in [L(1-r), L(1+r)]")
    num_requests: int = Field(32, gt=0, description="measured requests per cell (at least 2x its concurrency)")
    warmup_requests: int = Field(2, ge=0, description="requests sent first and excluded from results")
    api: Literal["completions", "chat"] = "completions"
    ignore_eos: bool = Field(True, description="generate exactly the asked length (a fair, fixed decode load)")
    temperature: float = Field(0.0, ge=0)
    seed: int = 0

    @property
    def label(self) -> str:
        return f"random-{self.input_tokens}x{self.output_tokens}"

    def requests_for(self, concurrency: int) -> int:
        """Measured requests at a concurrency: enough that every user slot turns over at least twice."""
        return max(self.num_requests, 2 * concurrency)


Workload = RandomWorkload
