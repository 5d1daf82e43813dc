"""The engines a matrix may name, and model families: what each engine calls the same model-specific piece
(starting with the tool-call parser).

Engines spell parsers differently (vLLM ``deepseek_v31``, SGLang ``deepseekv31``), so a matrix names the family
once (``models.<name>.family``) and each adapter takes its own spelling from here. Names were read from vLLM's
``vllm/tool_parsers/__init__.py`` (0.32/0.33) and SGLang's ``srt/function_call/parser_names.py`` (0.5.23); a
unit test checks them against both registries where the packages are importable.
"""

from __future__ import annotations

RUNTIME_NAMES: tuple[str, ...] = ("fake", "sglang", "vllm")
"""Runtimes a matrix may name; ``harness.servers.registry`` maps each to its adapter (a test keeps them equal)."""

FAMILIES: dict[str, dict[str, str]] = {
    # family -> runtime -> tool-call parser
    "deepseek-v3": {"vllm": "deepseek_v3", "sglang": "deepseekv3"},
    "deepseek-v31": {"vllm": "deepseek_v31", "sglang": "deepseekv31"},
    "deepseek-v32": {"vllm": "deepseek_v32", "sglang": "deepseekv32"},
    # Qwen3 (and the project's fixtures) emit Hermes-style <tool_call>{json}</tool_call>; SGLang's is "qwen25"
    "qwen3": {"vllm": "hermes", "sglang": "qwen25"},
    "qwen3-coder": {"vllm": "qwen3_coder", "sglang": "qwen3_coder"},
    "gpt-oss": {"vllm": "openai", "sglang": "gpt-oss"},
    "kimi-k2": {"vllm": "kimi_k2", "sglang": "kimi_k2"},
    "glm45": {"vllm": "glm45", "sglang": "glm45"},
    "llama3": {"vllm": "llama3_json", "sglang": "llama3"},
}

__all__ = ["FAMILIES", "RUNTIME_NAMES"]
