"""What the stored cells mean for a recipe: $/MTok (``cost``; ``estimate`` before a run), frontiers at matched
interactivity (``frontier``), each lever against the capstone lecture's claims (``cost_levers``), speculation
against its ``off`` twin (``speculation_effect``), and the ship recipe (``recommend``); every comparison among them
carries its margin against the launch-to-launch noise (``noise``). Pure functions of stored results; and, before a
run, what a plan asks that is implausible (``sanity``).
"""

from harness.analysis.cost import DEFAULT_TABLE, solve_what_if
from harness.analysis.estimate import estimate, group_estimate
from harness.analysis.recommend import slo_misses, slo_unsupported
from harness.analysis.sanity import Implausible, implausible

__all__ = [
    "DEFAULT_TABLE", "estimate", "group_estimate", "Implausible", "implausible", "slo_misses", "slo_unsupported",
    "solve_what_if",
]
