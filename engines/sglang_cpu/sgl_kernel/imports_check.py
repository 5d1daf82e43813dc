"""Which ``sgl_kernel`` names an SGLang source tree uses, read with ``ast``, and how that differs from the list this
stand-in was checked against.

Three forms are found, each written as one dotted string:

- ``from sgl_kernel import X`` and ``sgl_kernel.X`` (an attribute of the imported package) -> ``sgl_kernel.X``;
- ``from sgl_kernel.sub import X`` -> ``sgl_kernel.sub.X``, and ``import sgl_kernel.sub`` -> ``sgl_kernel.sub``;
- ``torch.ops.sgl_kernel.X`` and ``hasattr(torch.ops.sgl_kernel, "X")`` -> ``torch.ops.sgl_kernel.X``.

``sgl_kernel_npu`` is another package and is not counted. Strings and comments are not code and are not counted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "sgl_kernel"
TORCH_OPS = "torch.ops.sgl_kernel"


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def names_in_module(tree: ast.AST) -> Iterator[str]:
    """The ``sgl_kernel`` names one parsed module uses (see the module docstring for the forms)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PACKAGE or node.module.startswith(PACKAGE + "."):
                yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith(PACKAGE + "."))
        elif isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner == PACKAGE:
                yield f"{PACKAGE}.{node.attr}"
            elif owner == TORCH_OPS:
                yield f"{TORCH_OPS}.{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr"):
            # hasattr(torch.ops.sgl_kernel, "op"): the probe SGLang uses to pick a kernel or its torch fallback
            if len(node.args) >= 2 and _dotted(node.args[0]) == TORCH_OPS:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    yield f"{TORCH_OPS}.{name.value}"


def sgl_kernel_names(source_root: Path) -> frozenset[str]:
    """Every ``sgl_kernel`` name used by the ``*.py`` files under ``source_root`` (an installed ``sglang`` package
    directory, or a checkout's ``python/sglang``)."""
    found: set[str] = set()
    for path in sorted(source_root.rglob("*.py")):
        source = path.read_bytes()
        if PACKAGE.encode() not in source:
            continue  # every form names the package; most of SGLang's files need no parse
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError:
            continue  # SGLang ships a few templates with a .py suffix; they are not imported
        found.update(names_in_module(tree))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class ImportDrift:
    """How a source tree's ``sgl_kernel`` names differ from a committed list."""

    appeared: tuple[str, ...]
    """Used by the tree, not in the list: each needs checking (placeholder, or a real op SGLang now calls here)."""
    disappeared: tuple[str, ...]
    """In the list, no longer used by the tree: drop them from the list."""

    @property
    def clean(self) -> bool:
        return not self.appeared and not self.disappeared

    def describe(self, version: str, list_location: str) -> str:
        lines = [f"SGLang's imports of sgl_kernel differ from those checked against SGLang {version}:"]
        if self.appeared:
            lines.append(f"  appeared ({len(self.appeared)}): " + ", ".join(self.appeared))
        if self.disappeared:
            lines.append(f"  disappeared ({len(self.disappeared)}): " + ", ".join(self.disappeared))
        lines.append(f"update {list_location} after checking each against SGLang {version} (is it called on a CPU "
                     "without AMX? then it must be real, not a placeholder)")
        return "\n".join(lines)


def import_drift(used: Iterable[str], known: Iterable[str]) -> ImportDrift:
    used_set, known_set = set(used), set(known)
    return ImportDrift(appeared=tuple(sorted(used_set - known_set)), disappeared=tuple(sorted(known_set - used_set)))
