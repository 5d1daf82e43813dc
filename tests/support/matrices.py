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
