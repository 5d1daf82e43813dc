"""How a module is reached: by an import a search finds, or as an entry point of one of the registries
(``harness.registry``; the harness's own are declared in pyproject.toml). Nothing in the product loads one of its own
modules by a name built at run time, so "who uses this?" always has an answer a search gives."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "harness_testing")
SEARCHED = ("harness", "harness_testing", "tests", "tools", "docs")
REGISTRY_GROUPS = ("harness.runtimes", "harness.workload_kinds", "harness.predictors", "harness.executors",
                   "harness.fixtures", "harness.crosscheck_clients")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _modules() -> dict[str, Path]:
    return {_module_name(f): f for package in PACKAGES for f in (REPO / package).rglob("*.py")
            if "migrations" not in f.parts}


def _imported() -> set[str]:
    found: set[str] = set()
    for folder in SEARCHED:
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def _entry_points() -> dict[str, dict[str, str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project["entry-points"]


def test_the_registries_are_the_declared_entry_point_groups() -> None:
    assert set(_entry_points()) == set(REGISTRY_GROUPS)


def test_every_module_is_reached_by_an_import_or_an_entry_point() -> None:
    declared = {value.partition(":")[0] for group in _entry_points().values() for value in group.values()}
    imported = _imported()
    unreached = sorted(name for name in _modules() if name not in imported and name not in declared
                       and not name.endswith("__main__") and name not in PACKAGES and name.count(".") > 1)
    assert not unreached, "modules nothing imports and no entry point declares: " + ", ".join(unreached)


def test_every_entry_point_names_a_module_and_attribute_that_exist() -> None:
    modules = _modules()
    for group, entries in _entry_points().items():
        for name, value in entries.items():
            module, _, attribute = value.partition(":")
            assert module in modules, f"{group} {name}: no module {module}"
            assert attribute and f"{attribute.split('.')[0]} =" in modules[module].read_text() or \
                f"class {attribute}" in modules[module].read_text(), f"{group} {name}: {value} is not defined there"


def _names_harness(argument: ast.expr) -> bool:
    """Whether a module name passed to import_module is built from the harness's own (a library's lazy import,
    pynvml or AIConfigurator, is not)."""
    return any(isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value.startswith("harness")
               for part in ast.walk(argument))


def test_the_product_loads_none_of_its_own_modules_by_a_built_name() -> None:
    offenders = []
    for path in (REPO / "harness").rglob("*.py"):
        if path.name == "registry.py" and path.parent.name == "harness":
            continue  # the one loader: entry points
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "import_module" and node.args and _names_harness(node.args[0])):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, "import the module, or declare it as an entry point: " + ", ".join(offenders)
