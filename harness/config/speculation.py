"""The speculation axis: which speculative-decoding method a server runs, and how deep it drafts.

One model per method, told apart by ``method``. YAML may write a bare method name (``mtp``) for its defaults;
YAML 1.1 reads a bare ``off`` as ``false``, which is taken to mean ``off`` too. Engine flags are the runtime
adapters' business; this module only says what was asked for, in terms both engines share:

- ``k``: tokens drafted per step (vLLM ``num_speculative_tokens``, SGLang ``--speculative-num-steps``);
- ``top_k``: branches per drafting step (SGLang ``--speculative-eagle-topk``; 1 is a chain, the only shape vLLM
  drafts);
- ``draft_tokens``: tokens verified per step including the root (SGLang ``--speculative-num-draft-tokens``);
  ``k + 1`` for a chain, so it only needs saying for a tree;
- ``draft_tp``: tensor-parallel size of a separate draft model (vLLM ``draft_tensor_parallel_size``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from harness.config.fixtures import check_fixture_id


class _Method(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    _added_later: ClassVar[frozenset[str]] = frozenset()
    """Fields added after cell ids were first published: they enter a server's id only when set."""
    method: str
    """Each variant narrows this to its own literal (the union's discriminator)."""

    @property
    def label(self) -> str:
        k = getattr(self, "k", None)
        method = self.method
        # "eagle3" ends in a digit: "eagle3k3" keeps its depth readable where "eagle33" would not
        base = method if k is None else f"{method}k{k}" if method[-1].isdigit() else f"{method}{k}"
        top_k = getattr(self, "top_k", 1)
        return base if top_k == 1 else f"{base}t{top_k}"

    @property
    def is_off(self) -> bool:
        return self.method == "off"


class _Drafted(_Method):
    """Methods whose drafter runs a forward pass per drafted token and can branch (a tree) at each step."""

    _added_later = frozenset({"top_k", "draft_tokens"})

    k: int = Field(3, gt=0, description="draft tokens per step (tree depth)")
    top_k: int = Field(1, gt=0, description="branches per drafting step; 1 = a chain")
    draft_tokens: int | None = Field(None, gt=1, description="tokens verified per step, the root included; "
                                                            "default k + 1 (a chain); needed for a tree")

    @model_validator(mode="after")
    def _tree(self) -> _Drafted:
        chain = self.k + 1
        if self.top_k == 1 and self.draft_tokens not in (None, chain):
            raise ValueError(f"a chain (top_k 1) of k={self.k} verifies {chain} tokens; drop draft_tokens or "
                             "raise top_k")
        if self.top_k > 1 and self.draft_tokens is None:
            raise ValueError("top_k > 1 drafts a tree: give draft_tokens, the tokens verified per step "
                             f"(at most k x top_k + 1 = {self.k * self.top_k + 1})")
        return self

    @property
    def verify_tokens(self) -> int:
        """Tokens verified per step, the root included."""
        return self.draft_tokens or self.k + 1


class SpeculationOff(_Method):
    method: Literal["off"] = "off"


class SpeculationMtp(_Drafted):
    """The model's own multi-token-prediction layer(s) as the drafter (DeepSeek-V3 / Qwen3-Next style)."""

    method: Literal["mtp"] = "mtp"
    k: int = Field(1, gt=0, description="draft tokens per step")


class _DraftModel(_Drafted):
    _added_later = frozenset({"top_k", "draft_tokens", "draft_tp"})

    draft_tp: int | None = Field(None, gt=0, description="tensor-parallel size of the drafter; default: the "
                                                         "engine's (vLLM: the target's TP)")

    @field_validator("draft_model", check_fields=False)
    @classmethod
    def _known_fixture(cls, value: str) -> str:
        return check_fixture_id(value)


class SpeculationEagle(_DraftModel):
    """An EAGLE (1/2) head trained on the target's last hidden state."""

    method: Literal["eagle"] = "eagle"
    draft_model: str = Field(description="EAGLE head checkpoint")


class SpeculationEagle3(_DraftModel):
    """An EAGLE-3 head, fed hidden states of several target layers."""

    method: Literal["eagle3"] = "eagle3"
    draft_model: str = Field(description="EAGLE-3 head checkpoint")


class SpeculationDraftModel(_DraftModel):
    """A separate small model of the same tokenizer (SGLang calls it STANDALONE)."""

    method: Literal["draft_model"] = "draft_model"
    draft_model: str = Field(description="small model of the same tokenizer that drafts")


class SpeculationNgram(_Method):
    """Prompt-lookup drafting: no model, proposals copied from n-grams already in the context."""

    method: Literal["ngram"] = "ngram"
    k: int = Field(3, gt=0)
    prompt_lookup_max: int = Field(4, gt=0, description="longest n-gram matched (vLLM)")
    prompt_lookup_min: int = Field(2, gt=0, description="shortest n-gram matched (vLLM)")

    @model_validator(mode="after")
    def _window(self) -> SpeculationNgram:
        if self.prompt_lookup_min > self.prompt_lookup_max:
            raise ValueError("prompt_lookup_min must be <= prompt_lookup_max")
        return self


class SpeculationSuffix(_Method):
    """Suffix decoding (Arctic Inference): proposals from suffix trees of the prompt and of past responses."""

    method: Literal["suffix"] = "suffix"
    k: int = Field(24, gt=0, description="most tokens speculated per step (vLLM's default: the tree depth, 24)")


SpeculationMethod = Annotated[
    SpeculationOff | SpeculationMtp | SpeculationEagle | SpeculationEagle3 | SpeculationNgram | SpeculationDraftModel
    | SpeculationSuffix,
    Field(discriminator="method"),
]
METHOD_NAMES = ("off", "mtp", "eagle", "eagle3", "ngram", "draft_model", "suffix")


class Speculation(RootModel[SpeculationMethod]):
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

    @property
    def draft_model(self) -> str | None:
        return getattr(self.root, "draft_model", None)

    def matches(self, selector: Any) -> bool:
        if selector is False or isinstance(selector, str):
            name = "off" if selector is False else selector
            return name in (self.method, self.label)
        if isinstance(selector, dict):
            return all(getattr(self.root, k, None) == v for k, v in selector.items())
        return False
