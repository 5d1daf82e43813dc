"""Test instruments, kept out of the product package: the fake engine (``fake_engine``, an OpenAI-compatible
server with a known latency model, speculative counters and fault injection), the runtime adapter that launches it
as any engine is launched (``fake_runtime``, declared in the ``harness.runtimes`` entry points as an engine from
outside the harness would be), the loopback streamer that measures the load client itself (``loopback``), and the
reverse proxy put in front of a real server measured as a deployment (``endpoint_proxy``: TLS, an API key, and the
faults of ``proxy_faults`` on chosen requests).

Tests, the client benchmark and the local Slurm demo use them; ``make bench`` never measures them. The servers import
nothing of ``harness``, so each launch starts in a fraction of a second.
"""
