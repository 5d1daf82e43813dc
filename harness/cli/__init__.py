"""Command line: each command parses its arguments and makes one library call. The matrix YAML is the interface.

Exit codes: 0 success, 1 the run finished but some cells failed (gate, regress, compare: a regression), 2 a harness
or input error (nothing launched for a bad matrix), 3 (gate, regress, compare) inconclusive: nothing regressed but
some figure's launch noise is wider than the tolerance, 130 interrupted (finished launches are kept; rerun to resume).

Each command imports the stages it calls when it runs, not when the CLI loads: every ``harness`` process would
otherwise pay for all of them (the exporters' pandas, the report's renderer, the history's database layer) before
parsing its arguments. A command module holds only the arguments and the calls; what ``--help`` shows is built
from names that load with the CLI.
"""

from harness.cli import export, history, judge, measure  # noqa: F401  (importing them registers their commands)
from harness.cli.app import app

__all__ = [
    "app",
]
