"""The precision axis: weight precision and KV-cache dtype of a served model.

Written in YAML as a shorthand (``bf16``, ``fp8``, ``bf16-kvfp8`` meaning bf16 weights with an fp8 KV cache) or
in full (``{weights: fp8, kv_cache: fp8}``). Runtime adapters translate it into their own flags.

Weight precisions: ``bf16``/``fp16`` (unquantized), ``fp8`` (block or per-tensor FP8), ``fp4`` (NVIDIA NVFP4,
the ModelOpt format; ``nvfp4`` is read as ``fp4``), ``mxfp4`` (OCP MX-FP4, as gpt-oss ships), ``int8``
(int8 weights with int8 activations, W8A8: compressed-tensors or SmoothQuant checkpoints, read from the checkpoint),
``int4``
(GPTQ/AWQ/compressed-tensors checkpoints, whose format the engine reads from the checkpoint) and ``int2`` (the
2-bit class: 2-bit GPTQ or the dynamic low-bit exports that keep some layers wider; read from the checkpoint too).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

WeightPrecision = Literal["bf16", "fp16", "fp8", "fp4", "mxfp4", "int8", "int4", "int2"]
KvCacheDtype = Literal["auto", "bf16", "fp8"]
QUANTIZED: frozenset[str] = frozenset({"fp8", "fp4", "mxfp4", "int8", "int4", "int2"})
"""Weight precisions that are a quantization (not a plain dtype)."""
_ALIASES = {"nvfp4": "fp4"}  # one name per format, so that cell ids and excludes agree


class Precision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: WeightPrecision = "bf16"
    kv_cache: KvCacheDtype = "auto"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            weights, sep, kv = value.partition("-kv")
            value = {"weights": weights, "kv_cache": kv} if sep else {"weights": weights}
        if isinstance(value, dict) and value.get("weights") in _ALIASES:
            value = {**value, "weights": _ALIASES[value["weights"]]}
        return value

    @property
    def label(self) -> str:
        """Short stable name: ``bf16``, ``fp8``, ``bf16-kvfp8``."""
        return self.weights if self.kv_cache == "auto" else f"{self.weights}-kv{self.kv_cache}"

    @property
    def quantized(self) -> bool:
        return self.weights in QUANTIZED

    def matches(self, selector: Any) -> bool:
        """True when an exclude/profile selector (shorthand or partial mapping) names this precision."""
        if isinstance(selector, str):
            selector = _ALIASES.get(selector, selector)
            return selector in (self.label, self.weights) or Precision.model_validate(selector) == self
        if isinstance(selector, dict):
            selector = {k: _ALIASES.get(v, v) if k == "weights" else v for k, v in selector.items()}
            return all(getattr(self, k, None) == v for k, v in selector.items())
        return False
