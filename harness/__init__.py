"""Benchmark-and-capstone harness for serving large MoE models on vLLM and SGLang.

The pipeline, one stage per package: ``config.load_matrix`` → ``plan.expand`` → ``pipeline.run_plan`` (rounds of
server launches, load, counters, the machine-speed probe, store) → ``verdict`` (gate, lock) → ``report.render_report``.
The CLI (``harness``) wraps each in one command; ``compare`` runs two recipes interleaved.
"""

from harness.config.matrix import Matrix, load_matrix
from harness.plan.cells import Cell, Plan
from harness.plan.expand import expand

__version__ = "0.1.0"
__all__ = ["Cell", "Matrix", "Plan", "expand", "load_matrix"]
