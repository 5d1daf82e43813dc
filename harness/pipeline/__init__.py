"""The only package that knows the order of stages: matrix → plan (expand, vet) → fixtures → rounds of launches
(``rounds``: every server configuration once per round, the machine-speed probe between rounds) → per launch
(``launch``: warm-up, load, counters, telemetry, profile, parity) → each cell's launches pooled → store.

Each server configuration is launched once per round and reused by every cell that differs only in client-side
settings. Completed launches are skipped unless forced. Cancellation (Ctrl-C, SIGTERM) unwinds through the
server's context manager, so no server outlives the run, and every finished launch is already on disk.
"""

from harness.pipeline.launch import prompt_offset, run_cell, run_group
from harness.pipeline.rounds import load_plan, render, run_plan

__all__ = ["load_plan", "prompt_offset", "render", "run_cell", "run_group", "run_plan"]
