"""Servers: each engine's adapter (argv from a server configuration), the process that owns a launched server,
its container wrapper, the engines' Prometheus metrics and speculative-decoding counters, and the test servers
(the fake engine, the loopback streamer). Each adapter registers itself beside its class
(``registry.register_runtime``) and declares everything the harness knows about its engine; ``registry.get_runtime``
finds it by name.
"""
