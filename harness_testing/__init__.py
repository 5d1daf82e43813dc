"""Test instruments, kept out of the product package: the fake engine (``fake_engine``, an OpenAI-compatible
server with a known latency model, speculative counters and fault injection), the runtime adapter that launches it
as any engine is launched (``fake_runtime``, declared in the ``harness.runtimes`` entry points as an engine from
outside the harness would be), and the loopback streamer that measures the load client itself (``loopback``).

Tests, the client benchmark and the local Slurm demo use them; ``make bench`` never measures them. The servers import
nothing of ``harness``, so each launch starts in a fraction of a second.
"""
