"""Verdicts on a stored run: the regression gate (``gate``: ok / regressed / inconclusive per figure, each with its
interval) against the committed baseline (``baseline``: every figure per server launch, with the machine speed of
each), and the environment lock (``lock``), written by ``stage`` as ``gate.json`` and ``lock.json`` for the report.
"""
