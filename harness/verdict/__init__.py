"""Verdicts on a stored run: the regression gate against the committed baseline (``gate``) and the environment
lock (``lock``), written by ``stage`` as ``gate.json`` and ``lock.json`` for the report to read.
"""
