"""The declared metrics and a cell's summary (``summary``), its repeats and server launches combined (``repeats``)
with their spread (``spread``), how sure a comparison of launches is (``intervals``), and the figures a verdict
can judge (``gateable``), and the per-look level of a check judged round by round (``sequential``): records in,
statistics out, nothing measured here.
"""

from harness.metrics.cell_summary import CellSummary, summarize
from harness.metrics.gateable import GATEABLE, GatedMetric, gated_metric
from harness.metrics.intervals import GATE_CONFIDENCE, detectable_change, judge, paired_ratio_interval
from harness.metrics.repeats import combine, combine_launches
from harness.metrics.sequential import (
    FALSE_VERDICT_RATE,
    Look,
    false_verdict_rate,
    look,
    look_confidence,
    per_look_level,
)

__all__ = [
    "CellSummary", "combine", "combine_launches", "GATE_CONFIDENCE", "GATEABLE", "GatedMetric", "gated_metric", "judge",
    "detectable_change", "paired_ratio_interval", "summarize", "FALSE_VERDICT_RATE", "Look", "false_verdict_rate",
    "look", "look_confidence", "per_look_level",
]
