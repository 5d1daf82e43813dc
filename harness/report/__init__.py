"""The capstone report: a typed context built from stored results and verdicts (``context``), rendered through
templates that only format (``render``), with its figures (``plots``); and the plan as text (``plan_view``).
"""
