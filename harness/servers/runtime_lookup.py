"""Finding engine adapters: by the name a matrix uses, and what a matrix may name at all.

The adapters are the entries of ``harness.servers.runtime.RUNTIMES`` (entry-point group ``harness.runtimes``,
declared in ``pyproject.toml``: ``harness.registry``); an engine from outside the package declares its entry the
same way. Looking one up imports that adapter only (adapters import no engine), so ``harness plan`` stays fast.
``check_engines`` vets a matrix's engine names and model families against what the adapters declare; the config
layer below cannot, as it may not import the adapters.
"""

from __future__ import annotations

from harness.config.matrix import Matrix
from harness.errors import ConfigError
from harness.plan.cells import ServerConfig
from harness.servers.process import LaunchSpec
from harness.servers.runtime import RUNTIMES, Runtime, resolve_model_path

_FIX = "correct the value (see matrices/default.yaml for an example)"


def runtime_names() -> tuple[str, ...]:
    """Every adapter's name, sorted."""
    return RUNTIMES.names()


def unknown_runtime(name: str) -> str:
    """The one message for a runtime name nothing registered."""
    return RUNTIMES.unknown(name)


def get_runtime(name: str) -> Runtime:
    """The adapter for a runtime name; an unknown name's KeyError lists the known ones."""
    return RUNTIMES.get(name)()


def model_families() -> tuple[str, ...]:
    """The model families some adapter has a tool-call parser for, sorted (every adapter is imported)."""
    return tuple(sorted({family for cls in RUNTIMES.entries().values() for family in cls.tool_parsers}))


def launch_spec(server: ServerConfig, port: int) -> LaunchSpec:
    """The exact argv and environment that start ``server`` on ``port``, from its runtime's adapter."""
    return get_runtime(server.runtime).launch_spec(server, resolve_model_path(server), port)


def check_engines(matrix: Matrix, source: str) -> None:
    """Raise one ConfigError (every problem, the first leading) when the matrix names a runtime nothing registered
    or a model family no engine has a parser for; the keys are those of the YAML."""
    known, families = set(runtime_names()), model_families()
    problems: list[tuple[str, str]] = []
    for model_name, model in matrix.models.items():
        if model.family is not None and model.family not in families:
            problems.append((f"models.{model_name}.family",
                             f"unknown family {model.family!r}; known families: {', '.join(families)}"))
        if isinstance(model.tool_call_parser, dict):
            problems += [(f"models.{model_name}.tool_call_parser", unknown_runtime(name))
                         for name in model.tool_call_parser if name not in known]
    problems += [("axes.runtime", unknown_runtime(name)) for name in matrix.axes.runtime if name not in known]
    problems += [(f"deployments.{name}.runtime", unknown_runtime(d.runtime)) for name, d in matrix.deployments.items()
                 if d.runtime not in known]
    if matrix.launches_configurations():
        problems += [("axes.runtime", f"{name} is the runtime of a server the harness reaches, never launches; "
                      "measure it under deployments:") for name in matrix.axes.runtime
                     if name in known and not RUNTIMES.get(name).launchable]
    problems += [("runtimes", unknown_runtime(name)) for name in matrix.runtimes if name not in known]
    if problems:
        (key, problem), rest = problems[0], problems[1:]
        raise ConfigError(source, key, problem + "".join(f"\n  also {k}: {p} (fix: {_FIX})" for k, p in rest), _FIX)
