"""Where a test session's time went, by tier: printed at the end of every run, so a suite that outgrows its budget
says which tier grew.

Each tier's line gives its tests, the time its tests took (setup, call and teardown summed) and its wall span, from
its first test's start to its last test's end. ``tests/conftest.py`` orders the tiers, but a tier's tests can sit
among another's (the PostgreSQL case of a history test runs beside its SQLite case), so spans can overlap: the test
time is what a tier costs, the span where it fell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

TIERS = ("fake_engine", "nsys", "database", "integration", "cluster")
"""What a test launches beyond itself (tests/README.md): a fake server, Nsight Systems on a real process, a real
PostgreSQL server, a real vLLM CPU server, a Slurm cluster."""


def tier_of(item: pytest.Item) -> str:
    """The heaviest thing the test launches (a real engine or cluster over PostgreSQL or nsys over a fake server),
    or ``unit`` for a test that launches nothing."""
    for tier in reversed(TIERS):
        if item.get_closest_marker(tier) is not None:
            return tier
    return "unit"


def tier_of_report(report: pytest.TestReport) -> str:
    """``tier_of`` from a report's keywords (its markers among them): under pytest-xdist the process that prints
    the summary collects nothing, and knows each test only by the reports its workers send."""
    return next((tier for tier in reversed(TIERS) if tier in report.keywords), "unit")


@dataclass
class _Tier:
    tests: int = 0
    seconds: float = 0.0
    first: float = field(default=float("inf"))
    last: float = 0.0


class TierTimes:
    """A pytest plugin: collects each test's tier and phases, and prints the table in the terminal summary."""

    def __init__(self) -> None:
        self._tiers: dict[str, _Tier] = {}
        self._tier_by_id: dict[str, str] = {}
        self._started = time.monotonic()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self._tier_by_id = {item.nodeid: tier_of(item) for item in items}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tier = self._tiers.setdefault(self._tier_by_id.get(report.nodeid) or tier_of_report(report), _Tier())
        tier.tests += report.when == "call"
        tier.seconds += report.duration
        tier.first = min(tier.first, report.start)
        tier.last = max(tier.last, report.stop)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self._tiers:
            return
        terminalreporter.section("time by tier")
        terminalreporter.write_line(f"{'tier':<12} {'tests':>6} {'test time':>10} {'wall span':>10}")
        for name in ("unit", *TIERS):
            tier = self._tiers.get(name)
            if tier is not None:
                terminalreporter.write_line(f"{name:<12} {tier.tests:>6} {tier.seconds:>9.0f}s "
                                            f"{tier.last - tier.first:>9.0f}s")
        terminalreporter.write_line(f"{'session':<12} {sum(t.tests for t in self._tiers.values()):>6} "
                                    f"{sum(t.seconds for t in self._tiers.values()):>9.0f}s "
                                    f"{time.monotonic() - self._started:>9.0f}s")
