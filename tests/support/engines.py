"""Where the engines' own argument parsers live for the tests that check our argv with them, and SGLang's own
environment for the test that serves it."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SGLANG_DIR = REPO / "build" / "sglang-args"
"""SGLang installed without its GPU dependencies by `make setup`, for its ``ServerArgs`` parser only."""
SGLANG_ARGV_CHECK = Path(__file__).with_name("sglang_argv_check.py")
"""Run with ``PYTHONPATH=SGLANG_DIR``: parses each argv with SGLang's own parser."""
SGLANG_ENV = REPO / "build" / "engines" / "sglang"
"""SGLang's own environment, the real server with the project's sgl_kernel stand-in (scripts/install-sglang.sh)."""
INSTALL_SGLANG = REPO / "scripts" / "install-sglang.sh"

NEEDS_VLLM = pytest.mark.skipif(find_spec("vllm") is None, reason="vLLM is not installed: run `make setup`")
"""For the tests that serve vLLM from a subprocess: found, not imported (importing vLLM took a collecting pytest
worker about 7 s)."""


def sglang_python() -> Path:
    """The interpreter of SGLang's environment, installed first if it is missing or stale. The install script holds
    a lock: where make test's engines lane started it in the background, this waits for that install to end, then
    finds the environment current. A failed install fails the caller with the script's last words."""
    done = subprocess.run(["bash", str(INSTALL_SGLANG), str(SGLANG_ENV), sys.executable], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/install-sglang.sh failed ({done.returncode}): {done.stderr[-2000:]}")
    return SGLANG_ENV / "bin" / "python"
