"""What the deployments' unit tests share: a matrix to add deployments to, and a key that must never be printed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

KEY = "sk-live-DO-NOT-PRINT"
MATRIX: dict[str, Any] = {
    "name": "t",
    "models": {"m": {"id": "fixture:tiny-qwen3-recall"}},
    "workloads": {"w": {"kind": "random", "input_tokens": 16, "output_tokens": 8, "num_requests": 4}},
}

WriteMatrix = Callable[[str], Path]
