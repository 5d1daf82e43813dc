"""The parallelism axis: tensor, data and expert parallel sizes of one server replica.

EP is written as a size because that is how recipes are published ("TP8 EP8"). Engines differ in how they
take it (vLLM: a switch, with EP = TP x DP; SGLang: ``--ep-size``); each runtime adapter checks the sizes it
can express and says so before anything launches.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Parallel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tp: int = Field(1, gt=0, description="tensor-parallel size")
    dp: int = Field(1, gt=0, description="data-parallel size (attention DP on engines that split it)")
    ep: int = Field(1, gt=0, description="expert-parallel size; 1 = experts replicated or TP-sharded")

    @model_validator(mode="after")
    def _ep_fits(self) -> Parallel:
        if self.ep > self.tp * self.dp:
            raise ValueError(f"ep={self.ep} exceeds the {self.tp * self.dp} ranks of tp x dp")
        return self

    @property
    def world_size(self) -> int:
        return self.tp * self.dp

    @property
    def label(self) -> str:
        parts = [f"tp{self.tp}"]
        if self.dp > 1:
            parts.append(f"dp{self.dp}")
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        return "-".join(parts)

    def matches(self, selector: Any) -> bool:
        if isinstance(selector, str):
            return selector == self.label
        if isinstance(selector, dict):
            return all(getattr(self, k, None) == v for k, v in selector.items())
        return False
