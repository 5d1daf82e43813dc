"""What a running server says about itself, in the harness's own vocabulary, so that one comparison
(``harness.servers.self_description``) can check it against what a deployment's owner declared.

Each engine's adapter reads its own endpoints (``Runtime.reveal``: vLLM's ``/version`` and the labels of its
``vllm:cache_config_info`` gauge; SGLang's ``/get_server_info``, ``/server_info`` on newer builds) and names what it
found with the keys below. Whatever the server returned is kept only after ``scrubbed`` has dropped every field that
looks like a secret: measured here, SGLang 0.5.23's ``/get_server_info`` returns its own ``api_key`` and
``admin_api_key`` in clear text.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FACTS = ("weights", "kv_cache", "tp", "dp", "ep", "speculation", "expert_load")
"""What a server may reveal that a deployment declares: weight precision, KV-cache dtype, parallel sizes, the
speculative method, whether its expert-load collector is on."""

SECRET_KEY = re.compile(r"(api[_-]?key|token(?!s|izer)|secret|password|passwd|credential|authorization|cookie)",
                        re.I)
"""Field names whose values are never stored (the key of a server's own config, a hub token); token counts and
tokenizer settings (``speculative_num_draft_tokens``, ``tokenizer_path``) are not secrets."""


def scrubbed(value: Any) -> Any:
    """``value`` without any mapping entry whose key looks like a secret, at any depth."""
    if isinstance(value, dict):
        return {k: ("<hidden>" if SECRET_KEY.search(str(k)) else scrubbed(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrubbed(v) for v in value]
    return value


class Revealed(BaseModel):
    """One engine's answer about itself: its version, the facts it reveals and which endpoints said what."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str | None = None
    facts: dict[str, str] = Field(default_factory=dict)
    """Keys of ``FACTS``, values in the matrix's spelling (``bf16``, ``fp8``, ``ngram``, ``off``, ``2`` ...)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The fields of the server's own configuration the harness keeps (scrubbed)."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Endpoint -> what it answered (``200``, ``404``, ``unreachable``)."""


def weights_from(quantization: str | None, dtype: str | None) -> str:
    """A weight precision in the matrix's spelling from an engine's quantization method and dtype."""
    if quantization:
        q = quantization.lower()
        for needle, name in (("mxfp4", "mxfp4"), ("fp4", "fp4"), ("fp8", "fp8"), ("int8", "int8"), ("w8a8", "int8"),
                             ("wna16", "int4"), ("awq", "int4"), ("gptq", "int4")):
            if needle in q:
                return name
        return q
    return {"float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get((dtype or "").lower(), "bf16")


def kv_cache_from(dtype: str | None) -> str:
    """A KV-cache dtype in the matrix's spelling (``auto``, ``bf16``, ``fp8``) from an engine's."""
    d = (dtype or "auto").lower()
    if d.startswith("fp8"):
        return "fp8"
    return {"bfloat16": "bf16", "bf16": "bf16"}.get(d, d)
