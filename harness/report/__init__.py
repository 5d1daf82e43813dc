"""The capstone report: a frozen, typed context built from stored results and verdicts (``context``, with its
groups in ``costs``, ``evidence``, ``reproducibility``, ``recommendation``, ``rows`` and ``load_shapes``), the
narrative that opens it (``narrative``, ``comparison_groups``, ``narrative_plots``), sections and the anchors its
numbers link to numbered in one place (``sections``), rendered through templates that only format (``render``,
``formatting``), with its figures (``plots``); the report as HTML and printed to PDF (``html_page``,
``pdf_pages``); and the plan as text (``plan_view``).
"""
