"""Escalate, don't double: from the quick check against the committed baseline, the figures worth a paired verdict
(those that read regressed or inconclusive) and the revision that made the baseline, to pair them against.

A quiet run costs what the quick check costs; a doubtful one re-measures beside the code that made the baseline,
so the machine's hour (which a committed baseline cannot share) drops out of the verdict.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.errors import ConfigError
from harness.regress.paired_verdict import Figure
from harness.verdict import GateResult, read_baseline

DOUBTFUL = ("regressed", "inconclusive")


def doubtful_figures(result: GateResult) -> tuple[Figure, ...] | None:
    """The gated figures to pair; None when the quick check failed in a way no re-measurement settles (a cell that
    failed or went missing fails the check as it is)."""
    if any(row.status in ("failed", "missing", "parity") for row in result.rows):
        return None
    return tuple((row.label, row.metric) for row in result.rows if row.status in DOUBTFUL)


def baseline_revision(path: Path, fingerprint: str) -> str:
    """The commit whose harness made the baseline this machine is judged against (its own entry, else the newest
    entry the file holds); ConfigError naming the fix when it records none."""
    machines = read_baseline(path).machines
    entry = next((m for m in machines if m.hardware.fingerprint == fingerprint), None) or \
        max(machines, key=lambda m: m.created_at, default=None)
    if entry is None or not entry.harness_commit:
        raise ConfigError(str(path), "harness_commit", "records no commit that made the baseline, so there is no "
                          "revision to re-measure beside", "promote the baseline again from a commit "
                          "(`harness baseline MATRIX`), or pass --against REV")
    return entry.harness_commit


def merged(quick: GateResult, paired: GateResult) -> GateResult:
    """The quick check's rows with the doubtful ones replaced by their paired verdicts: the escalated verdict."""
    settled = {(row.label, row.metric): row for row in paired.rows}
    rows = [settled.pop((row.label, row.metric), row) for row in quick.rows]
    rows += settled.values()  # the paired check's own findings (a cell failed in a round)
    return replace(quick, rows=tuple(rows), provenance=(*quick.provenance, *paired.provenance))
