from __future__ import annotations

import io

import pytest

from harness.load.progress import Progress, progress_wanted
from harness.load.records import ErrorInfo, RequestRecord


def _record(ok: bool) -> RequestRecord:
    return RequestRecord(index=0, warmup=False, input_tokens=4, max_tokens=10, send_time=0.0, end_time=0.1,
                         chunk_times=(0.01,), chunk_tokens=(10,), output_tokens=10,
                         error=None if ok else ErrorInfo("timeout", "slow"))


def test_live_line_counts_requests_tokens_and_errors() -> None:
    out = io.StringIO()
    progress = Progress("c4", 3, enabled=True, stream=out)
    for ok in (True, False, True):
        progress.update(_record(ok))
    progress.close()
    final = out.getvalue().split("\r")[-1]
    assert final.startswith("c4: 3/3 requests") and "1 errors" in final and final.endswith("\n")
    assert progress.tokens == 20


def test_quiet_when_disabled_in_ci_or_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    progress = Progress("c4", None, enabled=False, stream=out)
    progress.update(_record(True))
    progress.close()
    assert out.getvalue() == "" and "1 requests" in progress.line()

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    assert progress_wanted(Tty()) and not progress_wanted(io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not progress_wanted(Tty())
