"""The capstone report: a frozen, typed context built from stored results and verdicts (``context``, with its
groups in ``costs``, ``evidence``, ``reproducibility``, ``reproduction``, ``recommendation``, ``rows`` and
``load_shapes``), the narrative that opens it (``narrative``, ``comparison_groups``, ``narrative_plots``), sections
and the anchors its numbers link to numbered in one place (``sections``), rendered through templates that only format
(``render``, ``formatting``), with its figures (``plots``); the report as HTML and printed to PDF (``html_page``,
``pdf_pages``); the explorer page written with it, interactive frontiers with earlier runs overlaid and latency CDFs
(``explorer``, ``latency_cdfs``, ``explorer_page``); and the plan as text (``plan_view``).
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from harness.report.html_page import narrative_words, write_html
    from harness.report.pdf_pages import print_report
    from harness.report.plan_view import render_plan
    from harness.report.predicted_capstone import PredictedReport, predicted_report, write_predicted_report
    from harness.report.render import render_report
else:
    def __getattr__(name: str) -> object:
        """Each name imported on first use (PEP 562): the plan's text (``harness plan``) and the predicted report
        need none of the measured report's renderer (its context, templates, plots and explorer page), nor HTML."""
        if name == "render_report":
            from harness.report.render import render_report as value
        elif name == "render_plan":
            from harness.report.plan_view import render_plan as value
        elif name == "PredictedReport":
            from harness.report.predicted_capstone import PredictedReport as value
        elif name == "predicted_report":
            from harness.report.predicted_capstone import predicted_report as value
        elif name == "write_predicted_report":
            from harness.report.predicted_capstone import write_predicted_report as value
        elif name == "narrative_words":
            from harness.report.html_page import narrative_words as value
        elif name == "write_html":
            from harness.report.html_page import write_html as value
        elif name == "print_report":
            from harness.report.pdf_pages import print_report as value
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value

__all__ = [
    "narrative_words", "predicted_report", "PredictedReport", "print_report", "render_plan", "render_report",
    "write_html", "write_predicted_report",
]
