"""The capstone report: a frozen, typed context built from stored results and verdicts (``context``, with its
groups in ``costs``, ``evidence``, ``reproducibility`` and ``rows``), sections numbered in one place
(``sections``), rendered through templates that only format (``render``, ``formatting``), with its figures
(``plots``); and the plan as text (``plan_view``).
"""
