"""A paired check as text: how it ran (rounds, orders, level, why it stopped, the engines each side used, the
command that replays it) above the gate's table of its verdicts."""

from __future__ import annotations

from harness.regress.paired_run import PairedCheck
from harness.verdict import format_table


def format_paired(check: PairedCheck) -> str:
    """What ``harness regress --against`` prints."""
    result = check.result
    rounds = len(check.orders)
    first = sum(side == "reference" for side in check.orders)
    dirty = " with uncommitted changes" if check.candidate_dirty else ""
    head = [f"paired: reference {check.against} ({check.reference_commit[:12]}) beside the candidate (the work tree "
            f"at {(check.candidate_commit or 'no commit')[:12]}{dirty})",
            f"  rounds: {rounds} (reference first in {first}, candidate first in {rounds - first}; seed "
            f"{check.seed}); {check.min_rounds} to {check.max_rounds} rounds, {check.max_minutes:g} minutes at most",
            f"  each look judged at a one-sided {check.level:.2%} (5% false verdicts over every look, by "
            "simulation); a figure keeps the verdict of the first look that settles it",
            f"  stopped: {check.stopped}"]
    if check.round_seconds:
        head.append(f"  round time: {min(check.round_seconds):.0f} to {max(check.round_seconds):.0f} s")
    head += [f"  engines of the reference: {note}" for note in check.environments]
    if check.focus is not None:
        head.append(f"  escalated: {len(check.focus)} figure(s) the quick check left doubtful")
    table = format_table(result).replace("gate: ", "regress: ", 1).replace(
        f"baseline {result.launches}+ launches per configuration",
        f"reference re-measured in {result.launches} paired rounds (the launches column counts rounds)")
    table = table.replace("at 95% confidence (one-sided bounds: the 90% interval)",
                          f"(one-sided bounds at {check.level:.2%} per look)")
    return "\n".join([*head, f"  reproduce: {check.reproduce}", "", table])
