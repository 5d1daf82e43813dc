"""A toy engine from outside the harness, in one file: everything an engine declares, registered beside its class.

It proves that adding an engine touches no module of ``harness``: importing this file registers it in-process
(``RUNTIMES.register``); a package would declare it in its ``harness.runtimes`` entry points instead.
Its server is the project's fake OpenAI server (``harness_testing.fake_engine``), started as any engine is, so a matrix
naming ``runtime: toy`` runs through the real pipeline. It brings a model family of its own (``toy-family``), which a
matrix may name once this module is imported.
"""

from __future__ import annotations

import re

from harness.plan import ServerConfig
from harness.servers.runtime import RUNTIMES, Runtime

TOY_FAMILY = "toy-family"


@RUNTIMES.register
class ToyRuntime(Runtime):
    """The fake server under another name: no /metrics histograms, no speculation counters, no profiler."""

    name = "toy"
    module = "harness_testing.fake_engine"
    packages = ("harness",)  # its server ships with the harness
    server_version_patterns = (re.compile(r"toy engine version ([^\s,]+)"),)
    tool_parsers = {TOY_FAMILY: "toy_json"}
    shares_harness_env = True
    machine_bound = False  # the fake server sleeps: its figures do not move with the machine's speed

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        return ["--host", host, "--port", str(port), "--model", self.served_model_name(server),
                "--seed", str(server.settings.seed), *server.runtime_env.extra_args]
