"""The paired regression check: the reference (this repository at a revision, in a worktree with its own harness,
matrix, lock and engines) re-measured beside the candidate in randomized, balanced rounds, judged look by look at a
level that keeps false verdicts at 5% (``paired_run``); and the escalation of a doubtful quick check to one
(``escalation``)."""

from harness.regress.escalation import baseline_revision, doubtful_figures, merged
from harness.regress.paired_run import PairedCheck, PairedRequest, run_paired
from harness.regress.paired_text import format_paired
from harness.regress.rounds import balanced_orders

__all__ = ["balanced_orders", "baseline_revision", "doubtful_figures", "format_paired", "merged", "PairedCheck",
           "PairedRequest", "run_paired"]
