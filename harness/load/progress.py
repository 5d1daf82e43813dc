"""A live one-line progress display per cell on a terminal: requests done, output tok/s, errors.

Quiet where nobody watches: off when stderr is not a terminal or ``CI`` is set (CI logs want lines, not carriage
returns); the runner's periodic log lines remain. Redraws at most a few times a second, so a fast cell does not
spend its client's CPU on drawing.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from harness.load.records import RequestRecord

_REDRAW_S = 0.25


def progress_wanted(stream: TextIO | None = None) -> bool:
    """True on an interactive terminal outside CI (``stream``: standard error as it is when called, not as it was
    when this module was imported: a command that imports it while its output is redirected must not keep that)."""
    return not os.environ.get("CI") and (stream or sys.stderr).isatty()


class Progress:
    """Counts finished requests of one phase and redraws one status line."""

    def __init__(self, label: str, total: int | None, *, enabled: bool, stream: TextIO | None = None) -> None:
        self.label, self.total, self.enabled, self.stream = label, total, enabled, stream or sys.stderr
        self.done = self.errors = self.tokens = 0
        self.started = time.perf_counter()
        self.drawn_at = 0.0

    def update(self, record: RequestRecord) -> None:
        self.done += 1
        if record.error is None:
            self.tokens += record.output_tokens
        else:
            self.errors += 1
        now = time.perf_counter()
        if self.enabled and now - self.drawn_at >= _REDRAW_S:
            self.drawn_at = now
            self.stream.write("\r" + self.line(now))
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = (now if now is not None else time.perf_counter()) - self.started
        rate = self.tokens / elapsed if elapsed > 0 else 0.0
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.label}: {self.done}{of} requests, {rate:,.0f} out tok/s, {self.errors} errors, {elapsed:.0f} s"

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + self.line() + "\n")
            self.stream.flush()
