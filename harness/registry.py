"""One registry type for every extension point: engines, workload kinds, predictors, executors and fixtures.

Each extension point is one ``Registry`` instance, kept beside the base type its entries implement. Its entries are
found one way, the harness's own and a plugin's alike: the Python entry points of its group, read from installed
package metadata. The harness declares its own in ``pyproject.toml``::

    [project.entry-points."harness.runtimes"]
    vllm = "harness.servers.vllm:VllmRuntime"

and a package outside the harness declares its entries the same way in its own metadata (docs/extending/index.md).
A name is known without importing anything; an entry is imported the first time it is asked for, so listing the
fixtures never imports torch and ``harness plan`` imports only the engines its matrix names. Every entry carries
its own name (``name = "vllm"`` on the class, ``Recipe.name`` on a fixture), which must be the name it is listed
under: a search for either finds both. ``register`` adds an entry in-process (a test's throwaway adapter, a
notebook's experiment); a name already taken is refused there, as is one two packages both declare.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from typing import Generic, TypeVar, cast

Entry = TypeVar("Entry")


@functools.cache
def _installed() -> importlib.metadata.EntryPoints:
    """Every installed entry point, read once a process: a read walks every distribution on sys.path, and a
    command asks for several groups (the five groups cost 26 ms read one by one here, 10 ms read once)."""
    return importlib.metadata.EntryPoints(
        point for distribution in importlib.metadata.distributions() for point in distribution.entry_points)


@functools.cache
def _declared(group: str) -> dict[str, tuple[str, str]]:
    """name -> ("module:attribute", distribution) for every installed entry point of ``group``; two distributions
    declaring one name is refused, since which one wins would depend on the order of sys.path."""
    found: dict[str, tuple[str, str]] = {}
    for point in _installed().select(group=group):
        owner = point.dist.name if point.dist is not None else "an unnamed distribution"
        if point.name in found and found[point.name][0] != point.value:
            first, first_owner = found[point.name]
            raise ValueError(f"entry point {point.name!r} of group {group!r} is declared by both {first_owner} "
                             f"({first}) and {owner} ({point.value}); uninstall one")
        found[point.name] = (point.value, owner)
    return found


class Registry(Generic[Entry]):
    """The entries of one extension point, by the name a matrix (or the command line) uses.

    ``what`` names the point in messages ("runtime"); ``group`` is its entry-point group; ``check``, when given,
    vets an entry as it is loaded or registered (what it must declare) and raises TypeError naming what is missing.
    """

    def __init__(self, what: str, group: str, check: Callable[[str, Entry], None] | None = None) -> None:
        self.what, self.group, self._check = what, group, check
        self._loaded: dict[str, Entry] = {}
        self._added: dict[str, Entry] = {}

    def names(self) -> tuple[str, ...]:
        """Every entry's name, declared or registered, sorted; nothing is imported."""
        return tuple(sorted({*_declared(self.group), *self._added}))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._added or name in _declared(self.group))

    def unknown(self, name: str) -> str:
        """The one message for a name nothing declares."""
        return f"unknown {self.what} {name!r}; known {self.what}s: {', '.join(self.names()) or 'none'}"

    def source(self, name: str) -> str:
        """Where an entry is defined: ``module:attribute`` (``module`` alone for one registered in-process)."""
        if name in self._added:
            entry = self._added[name]
            return f"{getattr(entry, '__module__', type(entry).__module__)}"
        if name not in _declared(self.group):
            raise KeyError(self.unknown(name))
        return _declared(self.group)[name][0]

    def get(self, name: str) -> Entry:
        """The entry named ``name``, imported on first use; an unknown name's KeyError lists the known ones."""
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            if name not in _declared(self.group):
                raise KeyError(self.unknown(name))
            module, _, attribute = _declared(self.group)[name][0].partition(":")
            found: object = importlib.import_module(module)
            for part in filter(None, attribute.split(".")):
                found = getattr(found, part)
            entry = cast(Entry, found)  # what it is, the check (and the caller's use) says
            self._vet(name, entry)
            self._loaded[name] = entry
        return self._loaded[name]

    def entries(self) -> dict[str, Entry]:
        """Every entry, imported, by name (sorted)."""
        return {name: self.get(name) for name in self.names()}

    def register(self, entry: Entry) -> Entry:
        """Add ``entry`` in-process under the name it carries; usable as a class decorator. A name already
        declared or registered is refused."""
        name = getattr(entry, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.what} carries its name (``name = \"...\"``); {entry!r} has none")
        if name in self:
            raise ValueError(f"{self.what} {name!r} is already registered by {self.source(name)}")
        self._vet(name, entry)
        self._added[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry ``register`` added (a test cleaning up after itself)."""
        del self._added[name]

    def _vet(self, name: str, entry: Entry) -> None:
        carried = getattr(entry, "name", None)
        if carried != name:
            raise TypeError(f"{self.what} {name!r} ({_where(entry)}) carries the name {carried!r}: the name it is "
                            f"listed under and ``name`` must agree")
        if self._check is not None:
            self._check(name, entry)


def _where(entry: object) -> str:
    return f"{getattr(entry, '__module__', '?')}.{getattr(entry, '__qualname__', type(entry).__qualname__)}"


def declares(what: str, attributes: tuple[str, ...], see: str) -> Callable[[str, type], None]:
    """A ``check`` for a registry of classes: each must declare every one of ``attributes`` (nothing falls back to a
    default); ``see`` names the base class that documents them."""
    def check(name: str, cls: type) -> None:
        missing = [attribute for attribute in attributes if not hasattr(cls, attribute)]
        if missing:
            raise TypeError(f"{what} {name!r} ({cls.__module__}.{cls.__qualname__}) does not declare "
                            f"{', '.join(missing)} (see {see})")
    return check


__all__ = ["declares", "Registry"]
