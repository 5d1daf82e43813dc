"""The command line called in-process: the typer app under click's ``CliRunner``, answered as a finished process.

A ``python -m harness`` child pays 3-4 s of imports (scipy, pandas, SQLAlchemy, matplotlib) before it reads its
first argument, and every CLI call of the fake-engine tests paid it. Only a test of the real executable's
exit behaviour (a signal, Ctrl-C, a killed parent) needs the child; every other call runs the same app here and
gets the same three things back: the exit code, stdout and stderr, with the log lines on stderr as the executable
writes them.
"""

from __future__ import annotations

import logging
import subprocess
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app


def harness(*args: str | Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` run in this process; an exception that escapes the app is exit 1 with its traceback on
    stderr, as the interpreter would end the executable. Warnings are shown on stderr, as the executable shows them,
    instead of failing the test as pytest's ``filterwarnings = error`` would: the executable is what is emulated."""
    argv = [str(arg) for arg in args]
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()  # so the app's logging.basicConfig binds to the runner's stderr, as it would to the child's
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            result = CliRunner().invoke(app, argv, env=env, catch_exceptions=True)
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        root.handlers[:] = handlers
        root.setLevel(level)
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    return subprocess.CompletedProcess(["harness", *argv], code, result.stdout, stderr)
