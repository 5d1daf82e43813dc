"""The fake runtime: launches ``harness.servers.fake`` exactly as a real engine would be launched.

A test instrument only (lifecycle, fault injection, client overhead), never what ``make bench`` measures.
Knobs such as ``--die-after-requests`` come from the matrix's ``runtimes.fake.extra_args``.
"""

from __future__ import annotations

from harness.plan import ServerConfig
from harness.server_metrics import SpecCounterNames
from harness.servers.process import LaunchSpec
from harness.servers.runtime import Runtime


class FakeRuntime(Runtime):
    name = "fake"
    spec_counters = SpecCounterNames()

    def check(self, server: ServerConfig, source: str) -> None:
        """The fake server accepts any configuration."""

    def launch_spec(self, server: ServerConfig, model_path: str, port: int) -> LaunchSpec:
        argv = [self.python(server), "-m", "harness.servers.fake", "--host", server.settings.host, "--port",
                str(port), "--seed", str(server.settings.seed)]
        if not server.speculation.is_off:
            argv += ["--spec-k", str(getattr(server.speculation.root, "k", 1))]
        argv += server.runtime_env.extra_args
        return LaunchSpec(argv=tuple(argv), env=dict(server.runtime_env.env))
