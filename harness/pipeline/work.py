"""One round's unit of work for an executor: a server group's launch with the cells, SLO searches, profiles and
parity decodings still to run on it."""

from __future__ import annotations

from dataclasses import dataclass

from harness.plan import Cell, ServerGroup, SloSearch


@dataclass(frozen=True, slots=True)
class GroupWork:
    group: ServerGroup
    cells: tuple[Cell, ...]
    to_profile: tuple[Cell, ...]
    decodings: tuple[str, ...]
    searches: tuple[SloSearch, ...] = ()
