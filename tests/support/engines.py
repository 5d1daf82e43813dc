"""Where the engines' own argument parsers live for the tests that check our argv with them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SGLANG_DIR = REPO / "build" / "sglang-args"
"""SGLang installed without its GPU dependencies by `make setup`, for its ``ServerArgs`` parser only."""
SGLANG_ARGV_CHECK = Path(__file__).with_name("sglang_argv_check.py")
"""Run with ``PYTHONPATH=SGLANG_DIR``: parses each argv with SGLang's own parser."""
