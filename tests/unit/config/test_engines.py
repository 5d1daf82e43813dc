"""Model families: each engine's spelling of the tool-call parser, checked against the engines' registries."""

from __future__ import annotations

import pytest

from harness.config.engines import FAMILIES
from harness.config.matrix import ModelSpec

from tests.support.engines import SGLANG_DIR


def test_every_family_names_a_parser_vllm_registers() -> None:
    tool_parsers = pytest.importorskip("vllm.tool_parsers")
    registered = set(tool_parsers._TOOL_PARSERS_TO_REGISTER)
    assert {f["vllm"] for f in FAMILIES.values()} <= registered


def test_every_family_names_a_parser_sglang_lists() -> None:
    names = SGLANG_DIR / "sglang" / "srt" / "function_call" / "parser_names.py"
    if not names.is_file():
        pytest.skip(f"SGLang is not installed at {SGLANG_DIR} (make setup)")
    scope: dict[str, object] = {}
    exec(compile(names.read_text(), str(names), "exec"), scope)  # a dependency-free list, by SGLang's design
    assert {f["sglang"] for f in FAMILIES.values()} <= set(scope["TOOL_CALL_PARSER_NAMES"])  # type: ignore[arg-type]


def test_explicit_parser_beats_the_family() -> None:
    spec = ModelSpec(id="m", family="qwen3", tool_call_parser={"sglang": "qwen"})
    assert (spec.parser_for("vllm"), spec.parser_for("sglang")) == ("hermes", "qwen")
    assert ModelSpec(id="m", tool_call_parser="hermes").parser_for("sglang") == "hermes"
    assert ModelSpec(id="m").parser_for("vllm") is None
