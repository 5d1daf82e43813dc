"""The contract every runtime adapter fulfils: a ServerConfig in, an exact argv and environment out.

Adapters never launch anything themselves; ``ServerProcess`` does. An adapter says what its engine cannot run
(``findings``, collected with the generic recipe rules at plan time) and turns a config into the engine's own
flags (``engine_args``). Where the engine lives is decided here, once for every adapter: the interpreter named
by ``runtimes.<name>.python`` (or the harness's own), or a digest-pinned container image run by docker.

Everything else the harness knows about an engine is declared on its adapter too: its packages (and so its
installed version), the version line its server prints, its tool-call parser per model family, its metric and
counter names and its profiler. ``RUNTIMES`` lists the adapters (entry-point group ``harness.runtimes``:
``harness.registry``) and refuses one that leaves out a declaration every engine must make.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.config.matrix import ModelSpec
from harness.errors import ConfigError
from harness.fixtures import FIXTURE_PREFIX, fixture_path
from harness.plan.cells import ServerConfig
from harness.plan.findings import Finding, ModelFacts
from harness.plan.rules import raise_first
from harness.registry import Registry, declares
from harness.servers.container import bind_host, docker_launch
from harness.servers.engine_reveal import Revealer, reveal_nothing
from harness.servers.expert_load_collectors import EngineExpertLoad
from harness.servers.process import LaunchSpec
from harness.servers.profiler import EngineProfiler
from harness.servers.prometheus import ServerMetricNames
from harness.servers.speculation_counters import SpeculationCounters


@dataclass(frozen=True, slots=True)
class NodeRank:
    """One node's place in a replica that spans ``nodes`` nodes: which rank it is, where the head listens for the
    other ranks (``head_addr``), the rendezvous port there, and how many engine ranks each node runs."""

    rank: int
    nodes: int
    head_addr: str
    rendezvous_port: int
    ranks_per_node: int


PdRole = Literal["prefill", "decode"]


class Runtime(ABC):
    name: str
    """The name a matrix uses, and the one its entry in ``RUNTIMES`` is listed under."""
    module: str
    """The engine's server module, run as ``python -m <module>``."""
    # The three declarations below have no default on purpose: the registry refuses an adapter without them, so
    # a new engine cannot silently lose its version in the lock or its tool-call parser.
    packages: tuple[str, ...]
    """The engine's package names on the index, in the order looked up (``installed_package``)."""
    server_version_patterns: tuple[re.Pattern[str], ...]
    """What the server prints about its own version when it starts, read from its log by the lock (ANSI colours
    stripped first); () where it prints none."""
    tool_parsers: Mapping[str, str]
    """Model family (``models.<name>.family``) -> the engine's own spelling of its tool-call parser; the families
    a matrix may name are those some adapter declares (``harness.servers.runtime_lookup.model_families``)."""
    server_metrics: ServerMetricNames | None = None
    """Where the engine's /metrics keeps its latency histograms, prefix cache and counters (None: it has none)."""
    profiler: EngineProfiler | None = None
    """How the engine's own /start_profile and /stop_profile drive a profiler (None: it cannot be profiled)."""
    speculation_counters: SpeculationCounters | None = None
    """Reads speculative acceptance from the engine's /metrics counters (None: the engine has none)."""
    expert_load: EngineExpertLoad | None = None
    """Counts the tokens each MoE layer routes to each expert (``telemetry.expert_load``; None: no collector)."""
    shares_harness_env: bool = False
    """True when the engine may run in the harness's own environment (vLLM's CPU build is installed there)."""
    cpu_caveat: str | None = None
    """What a reader must know about this engine's figures on a CPU (the report states it once, beside the scale
    note); None where its CPU figures are its own kernels'."""
    nsys_cpu_floor_s: int = 110
    """The earliest second after launch a CPU Nsight Systems window may open on this engine's server
    (``profile.nsys_delay_floor_s`` overrides it): nsys 2022.4 hung at the window's end in 5 of 5 captures of a vLLM
    server whose window opened 93-97 s after launch, and none of 3 at 109-110 s (docs/cpu-engine.md); an engine
    measured without that hang sets its own."""
    machine_bound: bool = True
    """Its figures move with the machine's speed, so the machine-speed probe runs around its launches
    (``harness.calibration``); the tests' fake server, which only sleeps, is not."""
    launchable: bool = True
    """False for a runtime the harness only reaches (``openai``: a deployment whose engine is unknown)."""
    revealer: Revealer = staticmethod(reveal_nothing)
    """How its running server says what it runs (``harness.servers.engine_reveal``), checked against what a
    deployment declared."""

    def check(self, server: ServerConfig, source: str) -> None:
        """Raise ConfigError when ``server`` cannot run as asked (before anything launches): every rule's error,
        and its skips too when the plan was not vetted (``unsupported: skip`` drops those beforehand)."""
        raise_first(server, source, self)
        if server.expert_load and self.expert_load is not None and not server.is_deployment:
            self.expert_load.check(server, source)

    def findings(self, server: ServerConfig, facts: ModelFacts) -> list[Finding]:
        """What this engine cannot run of ``server``, as errors, skips and notes."""
        return []

    @abstractmethod
    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        """The engine's flags (after ``python -m <module>``), in the engine's exact, current spelling."""

    def engine_env(self, server: ServerConfig) -> dict[str, str]:
        return dict(server.runtime_env.env)

    def launch_spec(self, server: ServerConfig, model_path: str, port: int) -> LaunchSpec:
        """The exact argv (a list, never a shell string) and extra environment for one server."""
        args = self.engine_args(server, model_path, bind_host(server), port)
        env = self.engine_env(server)
        if server.expert_load and self.expert_load is not None:
            args += self.expert_load.server_args()
            env = {**self.expert_load.server_env(port), **env}  # the matrix's own environment wins
        module = self.server_module(server)
        if server.runtime_env.image:
            return docker_launch(server, [server.runtime_env.docker.python, "-m", module, *args], env,
                                 model_path, port, self.name)
        return LaunchSpec(argv=(self.python(server), "-m", module, *args), env=env)

    def server_module(self, server: ServerConfig) -> str:
        """The module run for ``server``: ``module``, unless the engine needs another entry on this hardware."""
        return self.module

    multi_node_since: str | None = None
    """The first engine version with the multi-node flags ``node_args`` writes (None: the adapter has none)."""

    def installed_package(self, python: str) -> tuple[str | None, str | None]:
        """(package, version) of the first of ``packages`` installed in ``python``'s environment; (None, None)
        when none is, or the interpreter cannot be run. The lock and the Slurm checks both read it from here."""
        if python == sys.executable:  # the harness's own environment: no interpreter to start
            for package in self.packages:
                try:
                    return package, importlib.metadata.version(package)
                except importlib.metadata.PackageNotFoundError:
                    continue
            return None, None
        code = ("import importlib.metadata as m, sys\nfor d in sys.argv[1:]:\n    try:\n        print(d, m.version(d))"
                "\n        break\n    except m.PackageNotFoundError:\n        pass")
        try:
            out = subprocess.run([python, "-c", code, *self.packages], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None, None
        package, _, version = out.stdout.strip().partition(" ")
        return (package, version) if version else (None, None)

    def engine_version(self, server: ServerConfig) -> str | None:
        """The engine's version installed in the server's interpreter (None: in a container, or not found)."""
        return None if server.runtime_env.image else self.installed_package(self.python(server))[1]

    def tool_parser(self, model: ModelSpec) -> str | None:
        """The tool-call parser this engine is started with for ``model``: the matrix's explicit one (one name
        for every runtime, or this runtime's entry), else this engine's for the model's family, else none."""
        explicit = model.tool_call_parser
        if isinstance(explicit, str):
            return explicit
        if isinstance(explicit, dict) and self.name in explicit:
            return explicit[self.name]
        return self.tool_parsers.get(model.family) if model.family else None

    def node_args(self, server: ServerConfig, node: NodeRank) -> list[str]:
        """Flags added to one node's argv when a replica spans several nodes; rank 0 serves HTTP."""
        raise ConfigError("matrix", f"runtimes.{self.name}", f"{self.name} servers cannot span nodes here",
                          "use a parallelism that fits one node (executor.gpus_per_node)")

    def node_launch_spec(self, server: ServerConfig, model_path: str, port: int, node: NodeRank) -> LaunchSpec:
        """``launch_spec`` for one node of a multi-node replica: the same server, with its rank's flags."""
        spec = self.launch_spec(server, model_path, port)
        health = spec.health_path if node.rank == 0 else None  # only the head answers HTTP
        return LaunchSpec(argv=(*spec.argv, *self.node_args(server, node)), env=spec.env, health_path=health)

    router_module: str | None = None
    """The engine's own router, run as ``python -m <module>`` from the harness's environment (None: none)."""
    router_ready_path = "/health"
    """What the router answers 200 on once it routes to its workers."""
    router_takes_ids = True
    """Whether the router passes a /v1/completions prompt of token ids on (the random workload sends ids)."""

    def router_args(self, server: ServerConfig, port: int, metrics_port: int, *, workers: Sequence[str] = (),
                    prefill: Sequence[tuple[str, int | None]] = (), decode: Sequence[str] = ()) -> list[str]:
        """The router's argv: round-robin (or the topology's policy) over ``workers``, or the engine's
        prefill/decode mode over ``prefill`` (URL, bootstrap port) and ``decode`` URLs."""
        raise ConfigError("matrix", "axes.topology", f"{self.name} has no router in this harness",
                          "use topology: colocated for this runtime")

    def pd_args(self, server: ServerConfig, role: PdRole, next_port: Callable[[], int],
                scratch: Path) -> tuple[list[str], dict[str, str], int | None]:
        """Flags and environment that make one server a prefill or decode part, and the bootstrap port the router
        must be told about (None where the engine has none)."""
        raise ConfigError("matrix", "axes.topology", f"{self.name} cannot run disaggregated prefill/decode here",
                          "use topology: colocated or {replicas: R}")

    def python(self, server: ServerConfig) -> str:
        """Interpreter of the engine's environment: ``runtimes.<name>.python``, else the harness's own."""
        return server.runtime_env.python or sys.executable

    def served_model_name(self, server: ServerConfig) -> str:
        """The model id requests name: the deployment's own, or the name the harness serves it under."""
        return server.deployment.served_model if server.deployment is not None else server.model_name


def resolve_checkpoint(model_id: str) -> str:
    """What an engine is given for a checkpoint id: ``fixture:<name>`` becomes the fixture's built directory, an
    existing local path its absolute form, anything else (a hub id) stays as written."""
    if model_id.startswith(FIXTURE_PREFIX):
        return str(fixture_path(model_id.removeprefix(FIXTURE_PREFIX)))
    return str(Path(model_id).resolve()) if Path(model_id).exists() else model_id


def resolve_model_path(server: ServerConfig) -> str:
    """The checkpoint an engine loads: the precision's pre-quantized checkpoint if given, else the model id."""
    return resolve_checkpoint(server.model.checkpoints.get(server.precision.weights, server.model.id))


def fixture_names(server: ServerConfig) -> set[str]:
    """The project fixtures a server loads: its model and its speculation's drafter, where they are fixtures."""
    ids = (server.model.checkpoints.get(server.precision.weights, server.model.id), server.speculation.draft_model)
    return {i.removeprefix(FIXTURE_PREFIX) for i in ids if i and i.startswith(FIXTURE_PREFIX)}


PLAIN_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
"""Weight precisions that are a plain dtype; both engines spell them the same way."""


NO_QUANTIZATION = "none"
"""``models.<m>.quantization.<precision>: none``: the checkpoint holds rounded weights in a plain dtype (a
dequantized export), loaded with no quantization method."""


def precision_args(server: ServerConfig, kv_dtype: dict[str, str], quantization: dict[str, str]) -> list[str]:
    """``--dtype``, ``--quantization`` and ``--kv-cache-dtype`` (the flags are shared; the values are each
    engine's own spelling, given by the adapter's tables)."""
    weights = server.precision.weights
    args = []
    if weights in PLAIN_DTYPES:
        args += ["--dtype", PLAIN_DTYPES[weights]]
    elif weights not in server.model.checkpoints:
        args += ["--dtype", "bfloat16"]  # online quantization of a bf16 checkpoint: activations stay bf16
    # the model's override (e.g. int4 as moe_wna16), else the adapter's name for the weight precision
    method = server.model.quantization.get(weights, quantization.get(weights))
    if method and method != NO_QUANTIZATION:
        args += ["--quantization", method]
    return [*args, "--kv-cache-dtype", kv_dtype[server.precision.kv_cache]]


RUNTIMES: Registry[type[Runtime]] = Registry(
    "runtime", "harness.runtimes",
    # what every adapter must declare: nothing falls back to a default
    check=declares("runtime", ("module", "packages", "server_version_patterns", "tool_parsers"),
                   "harness.servers.runtime.Runtime"))
"""Every engine adapter, by the name a matrix uses (docs/extending/index.md)."""
