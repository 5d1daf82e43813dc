"""Two launches' start-ups overlapped on this machine, with nothing measured beside either.

A server's start-up is imports and, for vLLM, a compile warm-up: vLLM's CPU build spawns three processes (API
server, engine core, worker), each importing torch and vLLM in turn (about 24 s of a launch's 35-40 on the AVX-512
EPYC), then compiles; SGLang's take 15-17 s. On a 2-core machine the next server group's server can start beside
this one's where the two leave a core free between them (a vLLM beside an SGLang; two vLLM start-ups keep both cores
busy and gain nothing). Once both are ready the next one is frozen (SIGSTOP to its
process group: it takes no CPU and answers nothing) while this group is measured, and thawed when its turn comes.
No cell is measured while another server starts or runs: the first group's load begins only when both start-ups
are over. A round's groups are taken in an order that pairs different engines (``interleaved``).

Only a plain launched server of one process group pairs (not a deployment, a router-fronted topology or a Slurm
placement); ``executor.start_ahead: true`` turns pairing on. It is off by default: in an A/B of three interleaved
rounds (2026-11-29) the server measured first read the same as when started alone (0.93-1.06 of it), while the one
thawed after waiting read the same in two rounds and with 28-41% less throughput in the third; until a longer study
says why, or that it was the machine, a run starts one server at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from harness.config import Matrix
from harness.pipeline.work import GroupWork
from harness.profiling import ProfileStage
from harness.servers import LaunchSpec, ServerProcess, free_port, launch_spec
from harness.store import Store

log = logging.getLogger(__name__)


def pairs(work: GroupWork) -> bool:
    """Whether this group's launch can start beside another's: a single server process group started here."""
    server = work.group.server
    return not server.is_deployment and server.topology.is_colocated


def interleaved(work: Sequence[GroupWork]) -> list[GroupWork]:
    """The round's groups in an order whose consecutive pairs start different engines: round-robin over the
    runtimes, each runtime's groups in plan order (the round still launches every configuration once). Two vLLM
    start-ups at once took as long as one after the other (74 s for both against 40 and 35 alone: its compile
    warm-up keeps both cores busy), while a vLLM start-up beside an SGLang one saved about 20 s and two SGLang
    about 8 s (the AVX-512 EPYC, 2026-11-29)."""
    by_runtime: dict[str, list[GroupWork]] = {}
    for item in work:
        by_runtime.setdefault(item.group.server.runtime, []).append(item)
    queues = list(by_runtime.values())
    ordered: list[GroupWork] = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def first_launch(work: GroupWork, store: Store, matrix: Matrix, *, avoid: int | None = None,
                 ) -> tuple[ServerProcess, LaunchSpec]:
    """The group's first server, not yet started: the argv its profiles ask for (a profiled cell's launch carries
    the engine's profiler flags), on a free port other than ``avoid`` (the port of the server starting beside it,
    not bound yet)."""
    server = work.group.server
    port = free_port(server.settings.host)
    while port == avoid:
        port = free_port(server.settings.host)
    spec = ProfileStage(matrix.profile, store).launch(launch_spec(server, port), list(work.to_profile))
    srv = ServerProcess(spec, server.settings.host, port, store.server_log(server.server_id),
                        server.settings.startup_timeout_s)
    return srv, spec


@dataclass
class StartedAhead:
    """A launch started before its group's turn: its server, the argv it runs, and its start-up."""

    server: ServerProcess
    spec: LaunchSpec
    starting: asyncio.Task[ServerProcess]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ServerProcess]:
        """The started server, thawed, for its group's work; stopped on the way out (a failed start-up raises
        its ``LaunchError`` here, as ``async with`` a server would)."""
        srv = await self.starting
        srv.resume()
        try:
            yield srv
        finally:
            await srv.stop()

    async def discard(self) -> None:
        """Stop it without using it (the round ended before its turn: a failure, Ctrl-C)."""
        if not self.starting.done():
            self.starting.cancel()  # ServerProcess reaps a cancelled start-up itself
        with contextlib.suppress(BaseException):
            await self.starting
        await self.server.stop()


def start(work: GroupWork, store: Store, matrix: Matrix, *, avoid: int | None = None) -> StartedAhead:
    srv, spec = first_launch(work, store, matrix, avoid=avoid)
    return StartedAhead(srv, spec, asyncio.ensure_future(srv.__aenter__()))


async def start_pair(this: GroupWork, following: GroupWork, store: Store, matrix: Matrix,
                     ) -> tuple[StartedAhead, StartedAhead]:
    """Both groups' servers started at once; returns when both start-ups are over (ready or failed), the
    following one frozen."""
    first = start(this, store, matrix)
    second = start(following, store, matrix, avoid=first.server.port)
    log.info("starting %s beside %s: it waits, frozen, until %s is done", following.group.server.label,
             this.group.server.label, this.group.server.label)
    try:
        await asyncio.wait([first.starting, second.starting])
    except BaseException:
        for started in (first, second):
            await started.discard()
        raise
    if second.starting.exception() is None:
        second.server.pause()
    return first, second
