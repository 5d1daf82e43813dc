"""The contract every runtime adapter fulfils: a ServerConfig in, an exact argv and environment out.

Adapters never launch anything themselves; ``ServerProcess`` does. Each adapter checks, before any launch,
that it can express the config (``check``) and names the Prometheus counters its engine exposes.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from pathlib import Path

from harness.plan import ServerConfig
from harness.server_metrics import SpecCounterNames
from harness.servers.process import LaunchSpec


class Runtime(ABC):
    name: str
    spec_counters: SpecCounterNames | None = None

    @abstractmethod
    def check(self, server: ServerConfig, source: str) -> None:
        """Raise ConfigError when this engine cannot run ``server`` as asked (before anything launches)."""

    @abstractmethod
    def launch_spec(self, server: ServerConfig, model_path: str, port: int) -> LaunchSpec:
        """The exact argv (a list, never a shell string) and extra environment for one server."""

    def python(self, server: ServerConfig) -> str:
        """Interpreter of the engine's environment: the matrix's ``runtimes.<name>.python`` or the harness's own."""
        return server.runtime_env.python or sys.executable

    def served_model_name(self, server: ServerConfig) -> str:
        return server.model_name


def resolve_model_path(server: ServerConfig) -> str:
    """The checkpoint an engine loads: the precision's pre-quantized checkpoint if given, else the model id;
    ``fixture:<name>`` becomes the fixture's built directory."""
    model_id = server.model.checkpoints.get(server.precision.weights, server.model.id)
    if model_id.startswith("fixture:"):
        from harness.fixtures import fixture_path

        return str(fixture_path(model_id.removeprefix("fixture:")))
    return str(Path(model_id).resolve()) if Path(model_id).exists() else model_id
