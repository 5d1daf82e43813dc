"""Servers: each engine's adapter (argv from a server configuration), the process that owns a launched server,
its container wrapper, the engines' Prometheus metrics and speculative-decoding counters, and the test servers
(the fake engine, the loopback streamer). ``registry.get_runtime`` finds an adapter by name, importing it lazily.
"""
