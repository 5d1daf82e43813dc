"""Which of a BFCL category's entries a quick run takes: a seeded sample that depends on (seed, category) alone.

Below the parity stage because the fixture builder needs the same draw: the recall instrument
(``harness.fixtures.tool_recall``) learns exactly the items a parity run with the same ``limit`` and ``seed`` scores.
"""

from __future__ import annotations

import random
from typing import TypeVar

T = TypeVar("T")


def seeded_sample(entries: tuple[T, ...], category: str, limit: int | None, seed: int) -> tuple[T, ...]:
    """At most ``limit`` of a category's entries, in BFCL's order, drawn by (seed, category) alone: single-turn
    and multi-turn categories are sampled alike."""
    if limit is None or limit >= len(entries):
        return entries
    chosen = sorted(random.Random(f"bfcl:{seed}:{category}").sample(range(len(entries)), limit))
    return tuple(entries[i] for i in chosen)
