"""The smallest matrix the unit tests start from (a fixture model, one random workload, two concurrencies)."""

BASE_MATRIX = """
name: t
models:
  m: {id: "fixture:tiny-qwen3-moe"}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}
axes:
  concurrency: [1, 2]
"""

ENGINE_CHECKS = """runtimes: {vllm: {extra_args: [--enforce-eager]}}
gates: {machine_speed: none}
predict: {predictor: none}
"""
"""For the real-engine tests, which check what vLLM does (its argv, counters, parsers, kernels, profiler), not how
fast it runs. Without torch.compile (``--enforce-eager``) a server on the DeepSeek-V3 fixture was ready in 47 s
instead of 156-192 s (its warm-up run alone took 82-88 s compiled), and decoded as fast (2026-11-26, the 2-core VM
of docs/studies/timings.md). No machine-speed probes around the rounds (two probes on both cores) and no CPU
prediction before them (its own probe): about a minute of each real-engine run, and no verdict here is a timing.
The measured default (`make bench`) keeps all three."""
ENGINE_CHECKS_WITHOUT_RUNTIMES = ENGINE_CHECKS.split("\n", 1)[1]
"""ENGINE_CHECKS less its ``runtimes:`` line, for a matrix that names its own (a second ``runtimes:`` key would
replace the first: YAML keeps the last)."""
