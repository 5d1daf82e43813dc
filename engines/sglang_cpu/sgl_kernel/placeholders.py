"""Placeholders for the ``sgl_kernel`` names SGLang imports but never calls on a CPU without AMX, and the rule the
package's module-level ``__getattr__`` follows to answer a name it does not define.

A placeholder makes ``from sgl_kernel import X`` succeed at SGLang's import time; calling it raises
``NotImplementedError`` naming itself, so a code path that was thought unreachable fails loudly and says which kernel
it wanted, instead of computing something else.
"""

from __future__ import annotations

from typing import Any, NoReturn

from .known_imports import PLACEHOLDERS, SGLANG_VERSION, SUBMODULES

STAND_IN = "engines/sglang_cpu"


class Placeholder:
    """Stands for ``sgl_kernel.<name>``: importable, never callable."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(
            f"sgl_kernel.{self.name} is not implemented by the harness's CPU stand-in ({STAND_IN}): SGLang "
            f"{SGLANG_VERSION} was read not to call it on a CPU without AMX. If this path is needed now, implement "
            f"it in {STAND_IN}/sgl_kernel after SGLang's own reference kernel and move it to REAL_OPS."
        )

    def __repr__(self) -> str:
        return f"<sgl_kernel.{self.name}: placeholder of the CPU stand-in>"


_CACHE: dict[str, Placeholder] = {}


def resolve(name: str) -> Placeholder:
    """What ``sgl_kernel.<name>`` is when the package does not define it.

    Raises ``AttributeError`` (so ``from sgl_kernel import name`` raises ``ImportError``) for dunder names (Python's
    own probes, e.g. ``__path__`` lookups by importers), for submodules of the real package this stand-in does not
    have (SGLang guards those imports and takes its fallback), and for names SGLang 0.5.23 does not import.
    """
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"module 'sgl_kernel' has no attribute {name!r}")
    if name in SUBMODULES:
        raise AttributeError(
            f"sgl_kernel.{name} is a submodule of the real sgl_kernel that the CPU stand-in ({STAND_IN}) does not "
            "provide"
        )
    if name not in PLACEHOLDERS:
        raise AttributeError(
            f"sgl_kernel.{name} is not among the names SGLang {SGLANG_VERSION} imports (known_imports.py in "
            f"{STAND_IN}/sgl_kernel); check it against SGLang and add it there"
        )
    if name not in _CACHE:
        _CACHE[name] = Placeholder(name)
    return _CACHE[name]
