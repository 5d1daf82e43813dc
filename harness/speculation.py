"""The speculation axis: which speculative-decoding method a server runs, and how deep it drafts.

One model per method, told apart by ``method``. YAML may write a bare method name (``mtp``) for its defaults;
YAML 1.1 reads a bare ``off`` as ``false``, which is taken to mean ``off`` too. Engine flags are the runtime
adapters' business; this module only says what was asked for.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator


class _Method(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @property
    def label(self) -> str:
        k = getattr(self, "k", None)
        return f"{self.method}{k}" if k is not None else self.method  # type: ignore[attr-defined]

    @property
    def is_off(self) -> bool:
        return self.method == "off"  # type: ignore[attr-defined]


class SpecOff(_Method):
    method: Literal["off"] = "off"


class SpecMtp(_Method):
    """The model's own multi-token-prediction layer(s) as the drafter (DeepSeek-V3 / Qwen3-Next style)."""

    method: Literal["mtp"] = "mtp"
    k: int = Field(1, gt=0, description="draft tokens per step")


class SpecEagle3(_Method):
    method: Literal["eagle3"] = "eagle3"
    k: int = Field(3, gt=0)
    draft_model: str = Field(description="EAGLE-3 head checkpoint")


class SpecNgram(_Method):
    """Prompt-lookup drafting: no model, proposals copied from n-grams already in the context."""

    method: Literal["ngram"] = "ngram"
    k: int = Field(3, gt=0)
    prompt_lookup_max: int = Field(4, gt=0)
    prompt_lookup_min: int = Field(2, gt=0)

    @model_validator(mode="after")
    def _window(self) -> SpecNgram:
        if self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError("prompt_lookup_min must be <= prompt_lookup_max")
        return self


class SpecDraftModel(_Method):
    method: Literal["draft_model"] = "draft_model"
    k: int = Field(3, gt=0)
    draft_model: str = Field(description="small model of the same tokenizer that drafts")


SpecMethod = Annotated[
    SpecOff | SpecMtp | SpecEagle3 | SpecNgram | SpecDraftModel, Field(discriminator="method")
]
METHOD_NAMES = ("off", "mtp", "eagle3", "ngram", "draft_model")


class Speculation(RootModel[SpecMethod]):
    """A speculation axis value; ``.root`` is the method model."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if value is False or value is None:  # YAML 1.1: bare `off` / `no` arrive as False
            return {"method": "off"}
        if isinstance(value, str):
            return {"method": value}
        return value

    @classmethod
    def off(cls) -> Speculation:
        return cls.model_validate("off")

    @property
    def method(self) -> str:
        return self.root.method

    @property
    def label(self) -> str:
        return self.root.label

    @property
    def is_off(self) -> bool:
        return self.root.is_off

    def matches(self, selector: Any) -> bool:
        if selector is False or isinstance(selector, str):
            name = "off" if selector is False else selector
            return name in (self.method, self.label)
        if isinstance(selector, dict):
            return all(getattr(self.root, k, None) == v for k, v in selector.items())
        return False
