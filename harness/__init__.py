"""Benchmark-and-capstone harness for serving large MoE models on vLLM and SGLang.

The pipeline, one stage per package: ``config.load_matrix`` → ``plan.expand`` → ``pipeline.run_plan`` (rounds of
server launches, load, counters, the machine-speed probe, store) → ``verdict`` (gate, lock) → ``report.render_report``.
The CLI (``harness``) wraps each in one command; ``compare`` runs two recipes interleaved.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.config.matrix import Matrix, load_matrix
    from harness.plan.cells import Cell, Plan
    from harness.plan.expand import expand

__version__ = "0.1.0"
__all__ = ["Cell", "Matrix", "Plan", "expand", "load_matrix"]
_SOURCES = {"Cell": "plan.cells", "Matrix": "config.matrix", "Plan": "plan.cells", "expand": "plan.expand",
            "load_matrix": "config.matrix"}


def __getattr__(name: str) -> Any:
    """The names above, imported on first use: every ``python -m harness.X`` imports this package first, and the
    fake engine's server (``harness.servers.fake``) uses none of them (they cost each of its launches 0.9 s)."""
    if name in _SOURCES:
        return getattr(import_module(f"harness.{_SOURCES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
