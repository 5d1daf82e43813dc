"""The catalogue of fixture ids a matrix may name (``fixture:<name>``): names only, for validation.

Building and locating them is ``harness.fixtures``; the schema needs to know only which names exist.
"""

from __future__ import annotations

FIXTURE_NAMES: tuple[str, ...] = ("tiny-qwen3-moe", "tiny-deepseek-v3", "tiny-deepseek-v3-lean", "tiny-qwen3-draft",
                                  "tiny-qwen3-eagle3", "tiny-qwen3-recall", "tiny-qwen3-recall-int2",
                                  "tiny-qwen3-recall-w8a8")
FIXTURE_PREFIX = "fixture:"
"""How a matrix names a fixture as a model or drafter id: ``fixture:<name>``."""


def check_fixture_id(model_id: str) -> str:
    """``model_id`` unchanged; a ``fixture:<name>`` naming no fixture raises ValueError (for config validators)."""
    name = model_id.removeprefix(FIXTURE_PREFIX)
    if model_id.startswith(FIXTURE_PREFIX) and name not in FIXTURE_NAMES:
        raise ValueError(f"unknown fixture {name!r}; the project builds: "
                         + ", ".join(FIXTURE_PREFIX + n for n in FIXTURE_NAMES))
    return model_id
