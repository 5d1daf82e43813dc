"""The closing line of ``make test``, whose two lanes are two pytest sessions: their JUnit reports added up.

    python -m tests.support.lane_totals build/test-lanes/*.xml   ->   tests: 1190 passed, 0 failed, 3 skipped

A lane that wrote no report (it stopped before its tests, at lint say) counts as failed, so the line never reads
clean over a lane that did not run.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def totals(reports: list[Path]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over the reports' test suites; errors count as failed."""
    passed = failed = skipped = 0
    for report in reports:
        if not report.is_file():
            failed += 1
            continue
        for suite in ET.parse(report).getroot().iter("testsuite"):
            tests, skips = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
            failures = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            passed += tests - skips - failures
            failed += failures
            skipped += skips
    return passed, failed, skipped


def main(argv: list[str]) -> int:
    passed, failed, skipped = totals([Path(arg) for arg in argv])
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
