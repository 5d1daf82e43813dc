"""Upkeep of what the repository ships, beside the ``harness`` package: each tool rewrites a file the product or
the repository reads, or is a make target, and is typed (mypy strict) and tested (``tests/tools/``) like the package.

- ``refit_cpu_step``: refits ``harness/predict/cpu_step_calibration.json``, the calibration the ``cpu-step``
  predictor fits its engine costs from, on stored runs;
- ``agent_trace``: writes ``matrices/data/agent-trace.jsonl``, the trace ``matrices/workloads.yaml`` serves;
- ``client_bench``: ``make client-bench``, our load client against every peer's (vLLM's, AIPerf, GuideLLM,
  inference-perf) on a loopback server: output tok/s, CPU-seconds, stamping delay.

Run one from the repository's root as a module: ``.venv/bin/python -m tools.agent_trace``. One-off measurements
are not tools: they live beside the docs page they support (``docs/studies/index.md``).
"""
