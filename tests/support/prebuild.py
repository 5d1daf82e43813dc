"""Build the fixture models in the background while the tests that do not need them run.

A cold build is minutes of torch on both cores; the unit tests and the fake-server integration tests leave one core
mostly idle (they wait on sockets and sleeps). Started at collection, the build overlaps them instead of blocking
the first test that launches a real server.

The build runs in steps, one ``python -m harness.fixtures NAME...`` child each (``tests/conftest.py`` asks for one
step: the shared tokenizer is then trained once). A test's own ``build_fixtures()`` (or its ``harness run``) finds
its models fresh without waiting for the lock, or takes the fixture root's build lock and builds what the
background did not: a failed step costs nothing but its time, and the test's build raises with the reason.

A test on the fixture models waits for its own models (``wait_for``, from ``tests/conftest.py``), not for the whole
build: a real engine serving beside a training run on two cores slows both, but each real-engine test mostly waits on
its server (about 0.6 of a core), and the build's order puts the quickly trained models first, so the lane's tests
on them fill what the training leaves instead of waiting minutes for models they do not serve."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

NICE_ENV = "HARNESS_PREBUILD_NICE"
"""The build's niceness: 10 by default, so the tests in the foreground come first and the build takes the cycles
they leave; ``make test``'s engines lane sets 0, since there the build is what the lane's next tests wait for and the
other lane runs niced instead (make test: nice 5)."""
STOP_GRACE_S = 15.0
POLL_S = 1.0
"""How often a waiting test looks for its fixtures' manifests."""


class BackgroundBuild:
    """The steps' children, one after another from a daemon thread; stopped (each child's temporary directory
    unwound by its SIGTERM handling) at session end."""

    def __init__(self, steps: Sequence[Sequence[str]], log_path: Path) -> None:
        self.steps = [list(step) for step in steps]
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="fixture-prebuild", daemon=True)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def _run(self) -> None:
        with open(self.log_path, "wb") as log:
            for step in self.steps:
                with self._lock:
                    if self._stopping.is_set():
                        return
                    niceness = os.environ.get(NICE_ENV, "10")
                    self._proc = subprocess.Popen(
                        ["nice", "-n", niceness, sys.executable, "-m", "harness.fixtures", "--parent", str(os.getpid()),
                         *step],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
                self._proc.wait()  # a failed step is rebuilt, and reported, by the test that needs it

    def wait(self) -> None:
        """Until every step has ended (built, failed or stopped)."""
        if self._thread.is_alive():
            self._thread.join()

    def wait_for(self, names: Sequence[str]) -> None:
        """Until the fixtures ``names`` are built (by this build or any other: make test starts one of its own
        first), or every step has ended; a test then starts on its own models while the build trains the rest."""
        from harness.fixtures import fixture_path
        from harness.fixtures.build import current_key, is_fresh_at

        keys = {name: current_key(name) for name in names}
        while self._thread.is_alive() and not all(is_fresh_at(fixture_path(n), k) for n, k in keys.items()):
            self._thread.join(POLL_S)

    def stop(self) -> None:
        """Stop the step in progress and start no other."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._thread.is_alive():
            self._thread.join(STOP_GRACE_S)
