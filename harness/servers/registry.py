"""Runtime registry: every engine adapter registers itself beside its class, and the rest of the harness finds it
here by the name a matrix uses.

``@register_runtime("vllm")`` on ``class VllmRuntime(Runtime)`` is the only place an engine's name is bound to its
adapter; an engine from outside the package registers the same way, from its own module, once that module is
imported. Nothing here imports an engine, so ``harness plan`` stays fast: the harness's own adapters are imported on
the first lookup (they import no engine either). ``check_engines`` vets a matrix's engine names and model families
against what the adapters declare; the config layer below cannot, as it may not import the adapters.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

from harness.config.matrix import Matrix
from harness.errors import ConfigError
from harness.plan.cells import ServerConfig
from harness.servers.process import LaunchSpec
from harness.servers.runtime import Runtime, resolve_model_path

_BUILTIN_MODULES = ("harness.servers.fake_runtime", "harness.servers.sglang", "harness.servers.vllm")
"""The harness's own adapters, all imported on the first lookup: about 20 ms on the project's 2-core machine (timed
around ``runtime_names()``), beside some 600 ms to import this module; cheaper than keeping a name -> module index
in step with the adapters."""
_DECLARED = ("module", "packages", "server_version_patterns", "tool_parsers")
"""What every adapter must declare (``harness.servers.runtime.Runtime``): nothing falls back to a default."""
_FIX = "correct the value (see matrices/default.yaml for an example)"

_registered: dict[str, type[Runtime]] = {}
_builtins_loaded = False

RuntimeClass = TypeVar("RuntimeClass", bound=type[Runtime])


def _load_builtins() -> None:
    global _builtins_loaded
    if not _builtins_loaded:
        for module in _BUILTIN_MODULES:  # each registers its adapter as it is imported
            importlib.import_module(module)
        _builtins_loaded = True


def register_runtime(name: str) -> Callable[[RuntimeClass], RuntimeClass]:
    """Class decorator: register the adapter under ``name``, which it then carries as ``name``. A name already
    taken, or an adapter that leaves out one of the declarations every engine makes, is refused."""

    def register(cls: RuntimeClass) -> RuntimeClass:
        if cls.__module__ not in _BUILTIN_MODULES:
            _load_builtins()  # so a name a built-in holds is refused now, not when the built-in loads later
        if name in _registered:
            taken = _registered[name]
            raise ValueError(f"runtime {name!r} is already registered by {taken.__module__}.{taken.__qualname__}")
        missing = [attribute for attribute in _DECLARED if not hasattr(cls, attribute)]
        if missing:
            raise TypeError(f"runtime {name!r} ({cls.__module__}.{cls.__qualname__}) does not declare "
                            f"{', '.join(missing)} (see harness.servers.runtime.Runtime)")
        cls.name = name
        _registered[name] = cls
        return cls

    return register


def runtime_names() -> tuple[str, ...]:
    """Every registered runtime's name, the built-ins included, sorted."""
    _load_builtins()
    return tuple(sorted(_registered))


def unknown_runtime(name: str) -> str:
    """The one message for a runtime name nothing registered."""
    return f"unknown runtime {name!r}; known runtimes: {', '.join(runtime_names())}"


def get_runtime(name: str) -> Runtime:
    """The adapter for a runtime name; an unknown name's KeyError lists the known ones."""
    _load_builtins()
    try:
        return _registered[name]()
    except KeyError:
        raise KeyError(unknown_runtime(name)) from None


def model_families() -> tuple[str, ...]:
    """The model families some registered engine has a tool-call parser for, sorted."""
    _load_builtins()
    return tuple(sorted({family for cls in _registered.values() for family in cls.tool_parsers}))


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
    problems += [("runtimes", unknown_runtime(name)) for name in matrix.runtimes if name not in known]
    if problems:
        (key, problem), rest = problems[0], problems[1:]
        raise ConfigError(source, key, problem + "".join(f"\n  also {k}: {p} (fix: {_FIX})" for k, p in rest), _FIX)
