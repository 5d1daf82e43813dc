"""A server made of several processes behind one endpoint, owned as one: a replica spanning nodes (follower ranks
and the head), or a deployment (replicas, or prefill and decode servers, and the router in front).

The parts start first, all at once, and each is ready when its own health endpoint answers (a follower rank that
serves no HTTP is ready when started); then the front process (the head rank or the router) starts, and the whole
is ready when the front answers. ``alive`` is every process alive: a part that dies fails the cell like a single
server dying. On every exit path the front stops first, then every part, each with its process group reaped, so
nothing outlives the harness. The server's own metrics are read from the parts that serve them (``metrics_urls``):
a router's ``/metrics`` is the router's, not the engines'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from harness.servers.process import LaunchSpec, ServerProcess


class CompositeServer(ServerProcess):
    """``async with CompositeServer(front, parts, ...) as srv:`` -> every part ready, then the front at srv.base_url."""

    def __init__(self, front: LaunchSpec, parts: Sequence[ServerProcess], host: str, port: int, log_path: Path,
                 startup_timeout_s: float, *, metrics_from_parts: bool = False) -> None:
        super().__init__(front, host, port, log_path, startup_timeout_s)
        self.parts = list(parts)
        self.metrics_from_parts = metrics_from_parts

    @property
    def metrics_urls(self) -> list[str]:
        if self.metrics_from_parts:
            return [p.base_url for p in self.parts if p.spec.health_path is not None]
        return [self.base_url]

    async def __aenter__(self) -> CompositeServer:
        try:
            started = await asyncio.gather(*(part.__aenter__() for part in self.parts), return_exceptions=True)
            failed = [r for r in started if isinstance(r, BaseException)]
            if failed:
                raise failed[0]
            await super().__aenter__()
        except BaseException:
            await self.stop()
            raise
        return self

    @property
    def alive(self) -> bool:
        return super().alive and all(part.alive for part in self.parts)

    def log_tail(self, lines: int = 40) -> str:
        """The front's log, then the tail of every part that has exited (the likely cause)."""
        tails = [super().log_tail(lines)]
        tails += [f"--- {part.log_path.name} ---\n{part.log_tail(lines)}" for part in self.parts if not part.alive]
        return "\n".join(t for t in tails if t)

    async def stop(self) -> None:
        try:
            await super().stop()
        finally:
            await asyncio.gather(*(part.stop() for part in self.parts), return_exceptions=True)
