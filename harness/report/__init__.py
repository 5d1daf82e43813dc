"""The capstone report: a frozen, typed context built from stored results and verdicts (``context``, with its
groups in ``costs``, ``evidence``, ``reproducibility``, ``reproduction``, ``recommendation``, ``rows`` and
``load_shapes``), the narrative that opens it (``narrative``, ``comparison_groups``, ``narrative_plots``), sections
and the anchors its numbers link to numbered in one place (``sections``), rendered through templates that only format
(``render``, ``formatting``), with its figures (``plots``); the report as HTML and printed to PDF (``html_page``,
``pdf_pages``); the explorer page written with it, interactive frontiers with earlier runs overlaid and latency CDFs
(``explorer``, ``latency_cdfs``, ``explorer_page``); and the plan as text (``plan_view``).
"""

from harness.report.html_page import narrative_words, write_html
from harness.report.pdf_pages import print_report
from harness.report.plan_view import render_plan
from harness.report.predicted_capstone import PredictedReport, predicted_report, write_predicted_report
from harness.report.render import render_report

__all__ = [
    "narrative_words", "predicted_report", "PredictedReport", "print_report", "render_plan", "render_report",
    "write_html", "write_predicted_report",
]
