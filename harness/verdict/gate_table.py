"""The gate's verdict as text: the markdown table ``harness gate`` prints (failures and doubts first), and the
change-with-interval cell the report reuses."""

from __future__ import annotations

import math

from harness.verdict.gate import GateResult
from harness.verdict.gate_row import GateRow


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.1f}"


def interval_text(row: GateRow) -> str:
    """``-4.1% [-9.8%, +2.0%]``: the change and its (90%) interval, or the exact change."""
    if row.ratio is None or row.low is None or row.high is None or not math.isfinite(row.ratio):
        return "–"
    return f"{row.ratio - 1:+.1%} [{row.low - 1:+.1%}, {row.high - 1:+.1%}]"


def detectable_text(row: GateRow) -> str:
    """``12%``: the smallest worsening this comparison reads as regressed 4 times in 5 ("–" where unknown)."""
    return f"{row.detectable:.0%}" if row.detectable is not None else "–"


def format_table(result: GateResult, matrix: str = "MATRIX") -> str:
    """The gate's verdict as a markdown table, failures and doubts first (what `harness gate` prints); ``matrix``
    names the matrix in the command it suggests."""
    lines = [f"gate: tolerance ±{result.tolerance:.0%} at 95% confidence (one-sided bounds: the 90% interval); "
             f"baseline {result.launches}+ launches per configuration"]
    if result.speed is not None:
        use = {"adjust": "timings scaled to the baseline's speed",
               "guard": "timings as measured; a regression a machine as slow as the probes allow could explain, "
                        "or a pass on a machine faster beyond the tolerance, is inconclusive",
               }.get(result.machine_speed, "")
        within = f" [{result.speed.low:.2f}, {result.speed.high:.2f}]" if result.speed.low is not None \
            and result.speed.high is not None else ""
        lines.append(f"machine speed: this run at {result.speed.ratio:.2f}x{within} of the baseline's ({use})")
    if result.elsewhere is not None:
        lines.append(f"baseline of another machine ({result.elsewhere}): only exact checks (errors, failed cells) are "
                     "judged; every other figure is inconclusive. fix: promote a baseline on this machine")
    lines += [f"  flagged: {difference}" for difference in result.provenance]
    lines += ["", "| verdict | cell | metric | baseline | now | change [90% interval] | noise | launches | "
                  "detectable here | note |", "|---|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for r in result.rows:
        metric = f"{r.metric} ({r.unit}, {r.direction} is better)" if r.unit else r.metric
        noise = f"±{r.noise:.1%}" if r.noise is not None else "–"
        launches = f"{r.launches[0]} / {r.launches[1]}" if any(r.launches) else "–"
        lines.append(f"| {r.status} | {r.label} | {metric} | {_num(r.baseline)} | {_num(r.current)} | "
                     f"{interval_text(r)} | {noise} | {launches} | {detectable_text(r)} | {r.note} |")
    share = result.conclusive_share
    lines += ["", f"verdict: {result.verdict} ({len(result.failures)} failing, {len(result.inconclusive)} "
                  f"inconclusive of {len(result.rows)} checks"
                  + (f"; {share:.0%} of gated figures conclusive)" if share is not None else ")")]
    doubtful = [r.detectable for r in result.inconclusive if r.detectable is not None]
    if doubtful:
        span = f"{min(doubtful):.0%}" if f"{min(doubtful):.0%}" == f"{max(doubtful):.0%}" else \
            f"{min(doubtful):.0%} to {max(doubtful):.0%}"
        lines.append(f"inconclusive figures could see a worsening of {span} or more at their noise and launches "
                     "(the column 'detectable here': read regressed 4 times in 5)")
        if result.machine_speed != "paired":
            revision = (result.baseline_commit or "REV")[:12]
            lines.append("a baseline from another hour carries that hour's machine drift; to settle these figures, "
                         f"re-measure the baseline's code beside this one: `harness regress {matrix} --against "
                         f"{revision}` (paired rounds on this machine)")
    return "\n".join(lines)
