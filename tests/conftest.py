"""Shared pytest fixtures: small matrices written to a temp dir, a tiny tokenizer; the run's order, with the fixture
models built in the background meanwhile. Plain helpers and data shared by several test modules live in
``tests/support/``."""

from __future__ import annotations

import itertools
import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.fixtures import fixture_names
from harness.host import CPUINFO_ENV, HardwareInfo, hardware_info

from tests.support import postgres
from tests.support.hosts import CPUINFO
from tests.support.prebuild import BackgroundBuild
from tests.support.processes import XDIST_WORKER, mark_session
from tests.support.tier_times import TIERS, TierTimes

PREBUILD = pytest.StashKey[BackgroundBuild]()
mark_session()  # before any test starts a process: live_pids counts this session's processes only


def _rank(item: pytest.Item) -> tuple[int, bool]:
    """Unit tests, then the fake engine's, then real servers and clusters; within each, those on the fixture models
    last. Under pytest-xdist the fake-engine, nsys and database tests go first instead: they mostly wait on processes
    and sockets, so started first they overlap the CPU-bound unit tests on the other workers instead of trailing them
    (make test's checks lane, 2026-11-27: tests/README.md)."""
    marked = {tier for tier in TIERS if item.get_closest_marker(tier) is not None}
    level = 2 if marked & {"integration", "cluster"} else 1 if marked else 0
    if level == 1 and XDIST_WORKER in os.environ:
        level = -1
    return level, item.get_closest_marker("fixtures") is not None


def prebuild_steps(items: list[pytest.Item]) -> list[list[str]]:
    """The fixture models the selected tests serve (``@pytest.mark.fixtures(NAME, ...)``; no names means every
    fixture), in the order the tests need them, as one step: the tests on them wait for the whole build anyway
    (``pytest_runtest_setup``), and one step trains the shared tokenizer once instead of once a step."""
    names: list[str] = []
    for item in items:
        marker = item.get_closest_marker("fixtures")
        if marker is not None:
            names += [name for name in (marker.args or fixture_names()) if name not in names]
    return [names] if names else []


EARLY_ENV = "HARNESS_EARLY_FIXTURES"
"""The fixtures make test starts building before these tests are collected (the Makefile's ENGINE_FIXTURES)."""


def check_early_build(steps: list[list[str]]) -> None:
    """make test builds the engines lane's models from its start, by a list of its own: it must name exactly what the
    lane's tests serve, or the lane trains a missing one late (or the early build trains one nobody serves)."""
    early = os.environ.get(EARLY_ENV)
    if early is None:
        return
    served = {name for step in steps for name in step}
    if set(early.split()) != served:
        raise pytest.UsageError(
            f"Makefile: ENGINE_FIXTURES is {sorted(set(early.split()))} but the engines lane's tests serve "
            f"{sorted(served)} (their @pytest.mark.fixtures); fix: set ENGINE_FIXTURES to the latter")


ENGINE_TIERS = ("integration", "cluster")
"""The tiers make test's engines lane runs (the Makefile's ENGINE_TIERS)."""
ENGINE_TESTS_ENV = "HARNESS_ENGINE_TESTS"
"""The test files make test's engines lane runs, set in the checks lane (the Makefile's ENGINE_TESTS): the checks
lane leaves them out, unread (their imports cost each of its workers seconds), and deselects the engine tiers."""


class EngineFiles:
    """In the checks lane, a test of the engine tiers outside ENGINE_TESTS would be run by neither lane: stop."""

    @pytest.hookimpl(tryfirst=True)  # before `-m` deselects the engine tiers, which would hide it
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        listed = os.environ.get(ENGINE_TESTS_ENV)
        if listed is None:
            return
        stray = sorted({str(item.path.relative_to(config.rootpath)) for item in items
                        if any(item.get_closest_marker(tier) for tier in ENGINE_TIERS)})
        if stray:
            raise pytest.UsageError(
                f"Makefile: ENGINE_TESTS is {listed.split()} but {stray} hold tests marked "
                f"{' or '.join(ENGINE_TIERS)}, which the checks lane leaves to the engines lane; fix: add them to "
                "ENGINE_TESTS")


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected, so a unit-only run builds nothing
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Unit tests first, then the integration tests, then those on the fixture models (a stable sort keeps the
    order within each); the models those need build in the background meanwhile."""
    items.sort(key=_rank)
    steps = prebuild_steps(items)
    check_early_build(steps)
    if config.option.collectonly or not steps:
        return
    build = BackgroundBuild(steps, config.rootpath / "build" / "test-prebuild.log")
    build.start()
    config.stash[PREBUILD] = build


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test on the fixture models starts once its models are built (tests/support/prebuild.py)."""
    marker = item.get_closest_marker("fixtures")
    if marker is not None and PREBUILD in item.config.stash:
        item.config.stash[PREBUILD].wait_for(marker.args or fixture_names())


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(TierTimes(), "tier-times")
    config.pluginmanager.register(EngineFiles(), "engine-files")


def pytest_unconfigure(config: pytest.Config) -> None:
    if PREBUILD in config.stash:
        config.stash[PREBUILD].stop()


@pytest.fixture(params=sorted(CPUINFO))
def host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
         tmp_path_factory: pytest.TempPathFactory) -> HardwareInfo:
    """This machine, as each identity of ``tests/support/hosts.py`` in turn: a test that depends on the machine
    (``pytestmark = pytest.mark.usefixtures("host")``) runs once as each identity (an AMD and an Intel one), and its
    expectations hold on whichever runner CI lands on."""
    path = tmp_path_factory.mktemp("host") / "cpuinfo"
    path.write_text(CPUINFO[request.param])
    monkeypatch.setenv(CPUINFO_ENV, str(path))
    return hardware_info()


@pytest.fixture
def write_matrix(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "matrix.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model directory holding only a small word-level tokenizer.json (no downloads, no fixture build)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<|im_end|>": 1, **{f"w{i}": i + 2 for i in range(254)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["<unk>", "<|im_end|>"])
    path = tmp_path_factory.mktemp("tiny-model")
    tokenizer.save(str(path / "tokenizer.json"))
    return path


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the session (started on first use, stopped at the end); its missing binaries
    fail the test with the fix rather than skip it, so a missing install step cannot pass unseen."""
    why = postgres.available()
    if why is not None:
        pytest.fail(why)
    with postgres.postgres_server() as url:
        yield url


_DATABASES = itertools.count()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.database)])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty results-history database: a SQLite file in the test's directory, then a new database on the
    session's PostgreSQL server, so every history test runs against both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    from sqlalchemy import create_engine, text

    server: str = request.getfixturevalue("postgres_url")
    name = f"test_{next(_DATABASES)}"
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.replace("/history?", f"/{name}?")
