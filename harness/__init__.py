"""Benchmark-and-capstone harness for serving large MoE models on vLLM and SGLang.

The pipeline, one stage per package: ``config`` (the matrix file) → ``plan`` (cells, server groups) →
``pipeline`` (rounds of server launches, load, counters, the machine-speed probe, store) → ``verdict`` (gate,
lock) → ``report``. The CLI (``harness``) wraps each in one command; ``compare`` runs two recipes interleaved.

The way in from Python is the one every command takes: ``harness.pipeline.validation.validate(path)`` (every check a
launch needs, one pass) or ``load_plan(path)`` (what reading stored results needs), each returning the ``Plan``.
``harness.config.load_matrix`` and ``harness.plan.expand`` are stages of that pass, not entries: alone they do not
check the engines, the recipe rules or the workloads. This package re-exports nothing.
"""

__version__ = "0.1.0"
