"""How far a whole ``harness run`` has got and about how long is left, for the person waiting on it: one line such as
``run: server 4 of 11 (m/vllm/bf16/tp1/off), cells 9 of 21 done, 6.1 min elapsed, about 12 min left (estimate
corrected by 3 finished launches: x1.4)``.

What it counts. A launch is one server group's work in one round (``GroupWork``: what an executor's ``run_round``
is handed; a server that died and was relaunched within it is still one); an nsys capture launch
(``profile.nsys_cells``) is counted in the launch whose cells it captures, its seconds added to that launch's
estimate. A cell is one cell measured on one launch, so a cell of three launches counts three times (an SLO
search's probes are not counted: how many a search takes is not known before it runs). Both totals are projected
up front from the plan (each round launches the groups with a cell still owed that many launches, as
``harness.analysis.estimate`` counts them, less the cells a resumed run has finished) and replaced by each round's
actual work as the rounds form.

How long is left is an ESTIMATE: each launch's seconds under the plan's priors (``group_estimate`` of the cells and
searches it runs), scaled by what the finished launches took on this machine over what they were estimated to take;
before any launch has finished, the raw estimate, labelled as such. The machine-speed probes between rounds are in
no launch's estimate.

Where it goes. On an interactive terminal outside CI (``progress_wanted``) it is written to the terminal when a
launch starts and finishes and once a minute meanwhile, each time as a whole line: it first clears the line the
per-cell display (``harness.load.progress``) is drawing, whose next redraw then lands below it. Elsewhere (CI, a
pipe, a log file) the same line is logged at INFO at the same moments. Executors report launches through
``current()``; one that reports none (Slurm's) still gets a line: its round's launches count as finished when the
round returns, the round's wall time as what they took.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TextIO

from harness.analysis import estimate, group_estimate
from harness.load import progress_wanted
from harness.pipeline.work import GroupWork
from harness.plan import Plan, ServerGroup

log = logging.getLogger(__name__)

EVERY_S = 60.0
"""The most time between two lines while a launch runs."""

_CURRENT: ContextVar[RunProgress | None] = ContextVar("run_progress", default=None)


def current() -> RunProgress | None:
    """The run's progress while ``RunProgress.running`` holds it (None outside a run): what an executor reports
    its launches to."""
    return _CURRENT.get()


def launch_seconds(plan: Plan, work: GroupWork) -> float:
    """One launch's estimated seconds under the plan's priors: its start (none for a deployment, which runs
    already), its cells and searches, and its nsys capture launches."""
    server = work.group.server
    hours, _, _ = group_estimate(plan, ServerGroup(server, work.cells, work.searches))
    start_s = group_estimate(plan, ServerGroup(server, ()))[0] * 3600 if server.is_deployment else 0.0
    captures_s = estimate(Plan(plan.matrix, (ServerGroup(server, work.to_profile),))).capture_s \
        if work.to_profile else 0.0
    return hours * 3600 - start_s + captures_s


@dataclass(slots=True)
class _Launch:
    label: str
    cells: int
    estimate_s: float
    started: float | None = None
    finished: bool = False


class RunProgress:
    """The run's launches and cells, done and to come, and the time left; see the module's docstring."""

    def __init__(self, plan: Plan, rounds: int, *, launches: int | None = None, finished: frozenset[str] = frozenset(),
                 clock: Callable[[], float] = time.monotonic, stream: TextIO | None = None, live: bool | None = None,
                 seconds: Callable[[Plan, GroupWork], float] = launch_seconds) -> None:
        self.plan, self.clock, self.stream = plan, clock, stream or sys.stderr  # as it is now, not at import
        self.live = progress_wanted(self.stream) if live is None else live
        self.seconds = seconds
        self.started = self.emitted_at = clock()
        self.emitted_done: tuple[int, int] | None = None
        self.formed: list[_Launch] = []
        self.round: dict[str, _Launch] = {}  # the round running now, by server id
        self.round_started = self.started
        self.actual_s = self.estimated_s = 0.0
        self.corrections = self.cells_done = 0
        self.estimable = True

        def projected(round_: int) -> list[_Launch]:
            owed = [GroupWork(g, tuple(c for c in g.cells if c.cell_id not in finished
                                       and plan.launches_of(c, launches) > round_), (), (),
                              g.searches if round_ == 0 else ()) for g in plan.groups]
            return [self._launch(w) for w in owed if w.cells or w.searches]

        self.ahead = {round_: projected(round_) for round_ in range(rounds)}

    def _launch(self, work: GroupWork) -> _Launch:
        estimate_s = 0.0
        if self.estimable:
            try:
                estimate_s = self.seconds(self.plan, work)
            except Exception as exc:  # noqa: BLE001  (an estimate is advice: the run goes on without one)
                log.warning("no run-time estimate for the progress line: %s", exc)
                self.estimable = False
        return _Launch(work.group.server.label, len(work.cells), estimate_s)

    def round_formed(self, round_: int, work: Sequence[GroupWork]) -> None:
        """Round ``round_``'s actual work replaces its projection (and any skipped round's before it)."""
        for formed in [r for r in self.ahead if r <= round_]:
            del self.ahead[formed]
        self.round = {w.group.server.server_id: self._launch(w) for w in work}
        self.formed += self.round.values()
        self.round_started = self.clock()

    def launch_started(self, work: GroupWork) -> None:
        launch = self.round.get(work.group.server.server_id)
        if launch is not None:
            launch.started = self.clock()
            self.emit()

    def launch_finished(self, work: GroupWork, cells: int) -> None:
        """The launch has ended, having measured ``cells`` of its cells (a failure recorded counts: it is done)."""
        launch = self.round.get(work.group.server.server_id)
        if launch is not None and launch.started is not None and not launch.finished:
            self._finish([launch], self.clock() - launch.started, cells)
            self.emit()

    def round_finished(self) -> None:
        """The round's launches its executor did not report finish now, in the round's wall time."""
        left = [launch for launch in self.round.values() if not launch.finished]
        if left:
            self._finish(left, self.clock() - self.round_started, sum(launch.cells for launch in left))
            self.emit()

    def _finish(self, launches: list[_Launch], took_s: float, cells: int) -> None:
        for launch in launches:
            launch.finished = True
        self.actual_s += took_s
        self.estimated_s += sum(launch.estimate_s for launch in launches)
        self.corrections += len(launches)
        self.cells_done += cells

    @property
    def factor(self) -> float | None:
        """Finished launches' time over their estimate (None before any has finished)."""
        return self.actual_s / self.estimated_s if self.corrections and self.estimated_s > 0 else None

    def left_s(self, now: float | None = None) -> float:
        """The estimated seconds left: every launch not finished at its corrected estimate, less what a running one
        has run already."""
        now = self.clock() if now is None else now
        factor = self.factor or 1.0
        upcoming = [launch for launches in self.ahead.values() for launch in launches]
        return sum(max(0.0, launch.estimate_s * factor - (now - launch.started if launch.started is not None else 0.0))
                   for launch in [*self.formed, *upcoming] if not launch.finished)

    def line(self) -> str:
        now = self.clock()
        upcoming = [launch for launches in self.ahead.values() for launch in launches]
        total, cells = len(self.formed) + len(upcoming), sum(launch.cells for launch in [*self.formed, *upcoming])
        running = [(i, launch) for i, launch in enumerate(self.formed, 1) if launch.started is not None
                   and not launch.finished]
        done = sum(1 for launch in self.formed if launch.finished)
        where = f"server {running[-1][0]} of {total} ({running[-1][1].label})" if running \
            else f"{done} of {total} server launches done"
        text = f"run: {where}, cells {self.cells_done} of {cells} done, {_duration(now - self.started)} elapsed"
        if done == total:
            return text
        if not self.estimable:
            return f"{text}, time left unknown (no estimate)"
        factor = self.factor
        basis = "raw estimate from the plan's priors; no launch finished yet" if factor is None else \
            f"estimate corrected by {self.corrections} finished launch{'es' if self.corrections > 1 else ''}: " \
            f"x{factor:.1f}"
        return f"{text}, about {_duration(self.left_s(now), about=True)} left ({basis})"

    def emit(self) -> None:
        """The line, now: on a live terminal as a line of its own above the per-cell display, else logged."""
        self.emitted_at, self.emitted_done = self.clock(), self._done()
        if self.live:
            self.stream.write("\r\x1b[K" + self.line() + "\n")
            self.stream.flush()
        else:
            log.info("%s", self.line())

    def _done(self) -> tuple[int, int]:
        return sum(1 for launch in self.formed if launch.finished), self.cells_done

    def tick(self) -> None:
        """The line again if none was shown for ``EVERY_S``."""
        if self.clock() - self.emitted_at >= EVERY_S:
            self.emit()

    async def _periodic(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, EVERY_S - (self.clock() - self.emitted_at)))
            self.tick()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[RunProgress]:
        """The run's span: executors find this progress through ``current()``, and the line comes at least once
        a minute; a run that ends normally ends with its last line."""
        token = _CURRENT.set(self)
        ticker = asyncio.create_task(self._periodic())
        try:
            yield self
        finally:
            _CURRENT.reset(token)
            ticker.cancel()
            await asyncio.wait([ticker])  # raises nothing of the ticker's; a cancellation of the run still does
        if self.formed and self.emitted_done != self._done():  # the last line, unless it was just shown
            self.emit()


def _duration(seconds: float, *, about: bool = False) -> str:
    """Minutes (whole ones from ten on, when ``about``), hours from two."""
    if seconds >= 7200:
        return f"{seconds / 3600:.1f} h"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if about and minutes >= 10 else f"{minutes:.1f} min"
