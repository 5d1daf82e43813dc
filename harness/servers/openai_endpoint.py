"""The runtime of a deployment whose engine the harness does not know: any OpenAI-compatible server.

It is measured as it is (``deployments.<name>.runtime: openai``) and never launched: no argv, no engine metrics
names, no speculation counters, no profiler, no expert-load collector, no tool-call parser to pick. What such a server
reveals about itself is what ``GET /v1/models`` lists (``harness.servers.self_description``); everything else is
"declared, not verified".
"""

from __future__ import annotations

from harness.errors import ConfigError
from harness.plan.cells import ServerConfig
from harness.servers.runtime import Runtime


class OpenAiRuntime(Runtime):
    """An OpenAI-compatible endpoint of an unknown engine: reached, never launched."""

    name = "openai"
    module = ""
    packages = ()
    server_version_patterns = ()
    tool_parsers: dict[str, str] = {}
    launchable = False
    machine_bound = False

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        raise ConfigError("matrix", "axes.runtime", "openai names a server of an unknown engine, which the harness "
                          "cannot launch", "measure it as a deployment (deployments.<name>.runtime: openai)")
