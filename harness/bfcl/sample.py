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
    and multi-turn categories are sampled alike. The draw is the first ``limit`` of one seeded shuffle, so a smaller
    sample is part of every larger one: raising the limit adds items and never swaps one (the recall instrument's
    24 learnt items are in every sample of 24 or more, and every sample of fewer is among them)."""
    if limit is None or limit >= len(entries):
        return entries
    # random.sample's own draw switches algorithm with the sample's size (below about a third of the population, it
    # draws into a set), and a small sample was then not part of a larger one; a whole shuffle draws alike for every
    # limit, and its first 22 or more are what random.sample drew for those sizes of a category of up to ~250
    order = random.Random(f"bfcl:{seed}:{category}").sample(range(len(entries)), len(entries))
    return tuple(entries[i] for i in sorted(order[:limit]))
