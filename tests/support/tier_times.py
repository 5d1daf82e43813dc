"""Where a test session's time went, by tier: printed at the end of every run, so a suite that outgrows its budget
says which tier grew.

Each tier's line gives its tests, the time its tests took (setup, call and teardown summed), the CPU they used and
its wall span, from its first test's start to its last test's end. ``tests/conftest.py`` orders the tiers, but a
tier's tests can sit among another's (the PostgreSQL case of a history test runs beside its SQLite case), so spans
can overlap: the test time is what a tier costs, the span where it fell. On two cores shared by two lanes a test's
wall time says as much about its neighbours as about itself; its CPU seconds are its own cost: the test process's
and that of every child it reaped (servers, trainings, `python -m harness` runs, with their own children), so the
summary also lists the tests that used the most.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from dataclasses import dataclass, field

import pytest

TIERS = ("browser", "fake_engine", "nsys", "database", "integration", "cluster")
"""What a test launches beyond itself (tests/README.md): a headless browser, a fake server, Nsight Systems on a real
process, a real PostgreSQL server, a real vLLM CPU server, a Slurm cluster."""


TIER_PROPERTY = "tier"
CPU_PROPERTY = "cpu_s"
TOP_CPU = 25
"""How many of the tests that used the most CPU the summary lists."""


def cpu_seconds() -> float:
    """CPU this process has used, and its reaped children (user and system)."""
    used = os.times()
    return used.user + used.system + used.children_user + used.children_system


def tier_of(item: pytest.Item) -> str:
    """The heaviest thing the test launches (a real engine or cluster over PostgreSQL or nsys over a fake server),
    or ``unit`` for a test that launches nothing."""
    for tier in reversed(TIERS):
        if item.get_closest_marker(tier) is not None:
            return tier
    return "unit"


@dataclass
class _Tier:
    tests: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    first: float = field(default=float("inf"))
    last: float = 0.0


class TierTimes:
    """A pytest plugin: collects each test's tier and phases, and prints the table in the terminal summary."""

    def __init__(self) -> None:
        self._tiers: dict[str, _Tier] = {}
        self._cpu_by_test: dict[str, float] = {}
        self._started = time.monotonic()
        self._cpu_mark = cpu_seconds()

    def pytest_collection_finish(self) -> None:
        self._cpu_mark = cpu_seconds()  # collection's imports are no test's

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # The tier travels on the report: under pytest-xdist the process that prints the summary collects nothing
        # and knows each test only by the reports its workers send (keywords would not do: they hold the
        # directory's name, and every test under tests/integration would read as `integration`)
        report = yield
        now = cpu_seconds()  # since the end of the previous phase: each phase is charged what ran in it
        report.user_properties += [(TIER_PROPERTY, tier_of(item)), (CPU_PROPERTY, now - self._cpu_mark)]
        self._cpu_mark = now
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        tier = self._tiers.setdefault(str(properties.get(TIER_PROPERTY, "unit")), _Tier())
        cpu = float(properties.get(CPU_PROPERTY, 0.0))  # type: ignore[arg-type]
        tier.tests += report.when == "call"
        tier.seconds += report.duration
        tier.cpu += cpu
        self._cpu_by_test[report.nodeid] = self._cpu_by_test.get(report.nodeid, 0.0) + cpu
        tier.first = min(tier.first, report.start)
        tier.last = max(tier.last, report.stop)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self._tiers:
            return
        terminalreporter.section("time by tier")
        terminalreporter.write_line(f"{'tier':<12} {'tests':>6} {'test time':>10} {'CPU':>8} {'wall span':>10}")
        for name in ("unit", *TIERS):
            tier = self._tiers.get(name)
            if tier is not None:
                terminalreporter.write_line(f"{name:<12} {tier.tests:>6} {tier.seconds:>9.0f}s {tier.cpu:>7.0f}s "
                                            f"{tier.last - tier.first:>9.0f}s")
        terminalreporter.write_line(f"{'session':<12} {sum(t.tests for t in self._tiers.values()):>6} "
                                    f"{sum(t.seconds for t in self._tiers.values()):>9.0f}s "
                                    f"{sum(t.cpu for t in self._tiers.values()):>7.0f}s "
                                    f"{time.monotonic() - self._started:>9.0f}s")
        terminalreporter.section(f"most CPU ({TOP_CPU}: the test's process and the children it reaped)")
        for nodeid, cpu in sorted(self._cpu_by_test.items(), key=lambda kv: -kv[1])[:TOP_CPU]:
            terminalreporter.write_line(f"{cpu:7.1f}s  {nodeid}")
