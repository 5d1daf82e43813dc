"""What a server says about itself, in the matrix's vocabulary: secrets scrubbed at any depth, and the engines'
quantization and dtype names read as the matrix spells weights and KV-cache dtypes."""

from __future__ import annotations

import pytest

from harness.servers.revealed import Revealed, kv_cache_from, scrubbed, weights_from


def test_secrets_are_hidden_at_any_depth() -> None:
    config = {
        "api_key": "SECRET-1", "admin-api-key": "SECRET-2", "tp_size": 2,
        "hub": {"HF_TOKEN": "SECRET-3", "repo": "Qwen/Qwen3", "auth": {"Authorization": "Bearer SECRET-4"}},
        "replicas": [{"password": "SECRET-5", "port": 30000}, ("plain", {"cookie": "SECRET-6"})],
        "client_secret": {"nested": "SECRET-7"},
    }
    clean = scrubbed(config)
    assert "SECRET" not in repr(clean)
    assert clean["tp_size"] == 2 and clean["hub"]["repo"] == "Qwen/Qwen3" and clean["replicas"][0]["port"] == 30000
    assert clean["api_key"] == clean["hub"]["HF_TOKEN"] == clean["client_secret"] == "<hidden>"
    assert clean["replicas"][1] == ["plain", {"cookie": "<hidden>"}]  # tuples come back as JSON lists
    assert config["api_key"] == "SECRET-1"  # the server's answer itself is left as it was


def test_token_counts_and_tokenizer_settings_are_not_secrets() -> None:
    config = {"speculative_num_draft_tokens": 4, "max_total_tokens": 8192, "tokenizer_path": "/models/qwen3",
              "hf_token": "SECRET"}
    assert scrubbed(config) == {**config, "hf_token": "<hidden>"}


def test_values_are_never_taken_for_secrets() -> None:
    assert scrubbed({"tool_call_parser": "api_key", "notes": ["token"]}) == {"tool_call_parser": "api_key",
                                                                               "notes": ["token"]}
    assert scrubbed("plain") == "plain" and scrubbed(3) == 3


def test_a_revealed_answer_is_json_with_defaults() -> None:
    revealed = Revealed(version="0.32.0", facts={"kv_cache": "fp8"}, sources={"/version": "200"})
    assert Revealed.model_validate_json(revealed.model_dump_json()) == revealed
    assert Revealed().facts == {} and Revealed().version is None


@pytest.mark.parametrize(("quantization", "dtype", "weights"), [
    (None, None, "bf16"),
    (None, "bfloat16", "bf16"),
    (None, "auto", "bf16"),
    (None, "float16", "fp16"),
    (None, "half", "fp16"),
    ("fp8", "bfloat16", "fp8"),
    ("modelopt_fp4", None, "fp4"),
    ("mxfp4", None, "mxfp4"),
    ("w8a8_int8", "bfloat16", "int8"),
    ("w8a8_fp8", None, "fp8"),
    ("moe_wna16", None, "int4"),
    ("awq_marlin", None, "int4"),
    ("GPTQ", None, "int4"),
    ("compressed-tensors", None, "compressed-tensors"),  # not readable as a precision: kept as the engine said
])
def test_weights_are_read_from_quantization_then_dtype(quantization: str | None, dtype: str | None,
                                                       weights: str) -> None:
    assert weights_from(quantization, dtype) == weights


@pytest.mark.parametrize(("dtype", "kv_cache"), [
    (None, "auto"), ("auto", "auto"), ("fp8", "fp8"), ("fp8_e4m3", "fp8"), ("FP8_E5M2", "fp8"),
    ("bfloat16", "bf16"), ("bf16", "bf16"),
])
def test_kv_cache_dtypes_are_spelled_as_the_matrix_does(dtype: str | None, kv_cache: str) -> None:
    assert kv_cache_from(dtype) == kv_cache
