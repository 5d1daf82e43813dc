"""SGLang's own source, read as syntax trees (never imported), for the tests that check the names its adapter uses.

``make setup`` installs SGLang 0.5.23's Python source without its dependencies under ``build/sglang-args``
(``tests.support.engines.SGLANG_DIR``). These helpers find in it what the adapter relies on: its Prometheus
metric definitions, its FastAPI routes, the fields of its request and response models, its registries and the
choices of its flags. They only find; what to look for always comes from the harness.
"""

from __future__ import annotations

import ast
from functools import cache

from tests.support.engines import SGLANG_DIR

ROOT = SGLANG_DIR / "sglang"
MISSING = (f"SGLang's source is not installed at {SGLANG_DIR}: run `make setup` (pip install --no-deps --target "
           "build/sglang-args sglang==0.5.23 orjson IPython traitlets)")
HTTP_SERVER = "srt/entrypoints/http_server.py"
METRIC_KINDS = frozenset({"Counter", "Gauge", "Histogram", "Summary"})


@cache
def tree(relative: str) -> ast.Module:
    return ast.parse((ROOT / relative).read_text(), filename=relative)


@cache
def server_files(containing: str) -> tuple[str, ...]:
    """The server's modules (``srt/`` and ``launch_server.py``) whose text contains ``containing``."""
    paths = [ROOT / "launch_server.py", *sorted((ROOT / "srt").rglob("*.py"))]
    return tuple(str(path.relative_to(ROOT)) for path in paths if containing in path.read_text(errors="replace"))


def strings(node: ast.AST | None) -> set[str]:
    """Every string literal under ``node``."""
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)} \
        if node is not None else set()


def assigned(relative: str, name: str) -> ast.expr | None:
    """The value first assigned to ``name`` anywhere in a module (module, class or function level)."""
    for node in ast.walk(tree(relative)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return node.value
    return None


def dict_keys(relative: str, name: str) -> set[str]:
    value = assigned(relative, name)
    assert isinstance(value, ast.Dict), f"{relative} assigns no dict {name}"
    return {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def classes(relative: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree(relative).body if isinstance(n, ast.ClassDef)}


def fields(relative: str, name: str) -> dict[str, ast.expr]:
    """A class's annotated fields and their annotations, with those of its bases defined in the same module."""
    cls = classes(relative)[name]
    found: dict[str, ast.expr] = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes(relative):
            found |= fields(relative, base.id)
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node.annotation
    return found


def imported_from(relative: str, name: str) -> str | None:
    """The SGLang module (a path under ROOT) from which ``relative`` imports ``name``."""
    return _sglang_imports(relative).get(name)


@cache  # one walk of the module for all the names asked of it
def _sglang_imports(relative: str) -> dict[str, str]:
    """Name -> the SGLang module (a path under ROOT) a module first imports it from, unrenamed."""
    found: dict[str, str] = {}
    for node in ast.walk(tree(relative)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sglang."):
            for alias in node.names:
                if alias.asname is None:
                    found.setdefault(alias.name, node.module.removeprefix("sglang.").replace(".", "/") + ".py")
    return found


def named_classes(relative: str, annotation: ast.AST) -> list[tuple[str, str]]:
    """(module, class) of each SGLang class an annotation names (``Optional[UsageInfo]`` -> UsageInfo)."""
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            module = relative if node.id in classes(relative) else imported_from(relative, node.id)
            if module and (ROOT / module).is_file() and node.id in classes(module):
                found.append((module, node.id))
    return found


def class_attributes(relative: str, name: str) -> set[str]:
    """Names a class body assigns, annotated or not (``Envs.SGLANG_TORCH_PROFILER_DIR = EnvStr(...)``)."""
    found = set(fields(relative, name))
    for node in classes(relative)[name].body:
        if isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return found


def compared_in(relative: str, word: str) -> set[str]:
    """String literals a module tests for membership in something named with ``word`` (``"X" in activities``)."""
    return {node.left.value for node in ast.walk(tree(relative))
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str) and isinstance(node.ops[0], ast.In)
            and word in ast.unparse(node.comparators[0])}


def handler_models(handler: ast.FunctionDef | ast.AsyncFunctionDef) -> set[tuple[str, str]]:
    """(module, class) of the SGLang models a route handler's parameters are annotated with (its request body)."""
    return {found for arg in handler.args.args if arg.annotation
            for found in named_classes(HTTP_SERVER, arg.annotation)}


@cache  # SGLang's source does not change under the tests, and one test per metric asks
def metrics() -> dict[str, str]:
    """Every metric SGLang's server defines with a literal name: name -> Counter, Gauge, Histogram or Summary."""
    found = {}
    for relative in server_files('"sglang:'):
        for node in ast.walk(tree(relative)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in METRIC_KINDS:
                for kw in node.keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        found[kw.value.value] = node.func.id
    return found


Route = tuple[frozenset[str], ast.FunctionDef | ast.AsyncFunctionDef | None]


@cache
def routes() -> dict[str, Route]:
    """HTTP path -> (methods, handler) of the FastAPI app in http_server.py, and the paths mounted anywhere in the
    server (``Mount("/metrics", ...)``: every method, no handler)."""
    found: dict[str, Route] = {}
    for relative in server_files("Mount("):
        for node in ast.walk(tree(relative)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Mount" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                found[str(node.args[0].value)] = (frozenset({"GET", "POST"}), None)
    for node in ast.walk(tree(HTTP_SERVER)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.args
                    and isinstance(deco.func.value, ast.Name) and deco.func.value.id == "app"
                    and isinstance(deco.args[0], ast.Constant)):
                continue
            verb = deco.func.attr
            methods = {verb.upper()} if verb != "api_route" else \
                set().union(*(strings(kw.value) for kw in deco.keywords if kw.arg == "methods"))
            found[str(deco.args[0].value)] = (frozenset(methods), node)
    return found


def flag_choices(field: str) -> set[str]:
    """The ``choices`` SGLang's argument groups (``srt/arg_groups/fields``) give a server argument."""
    for path in sorted((ROOT / "srt" / "arg_groups" / "fields").glob("*.py")):
        relative = str(path.relative_to(ROOT))
        for node in ast.walk(tree(relative)):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == field:
                for call in ast.walk(node.annotation):
                    for kw in call.keywords if isinstance(call, ast.Call) else ():
                        if kw.arg == "choices" and isinstance(kw.value, ast.Name):
                            return strings(assigned(imported_from(relative, kw.value.id) or relative, kw.value.id))
                        if kw.arg == "choices":
                            return strings(kw.value)
    raise AssertionError(f"no server argument {field} with choices in srt/arg_groups/fields")


def printed_with(name: str, placeholder: str) -> list[tuple[str, str]]:
    """(module, text) of each line the server logs or prints that formats ``name`` (e.g. ``__version__``), every
    formatted value rendered as ``placeholder``."""
    found = []
    for relative in server_files(name):
        for node in ast.walk(tree(relative)):
            func = node.func if isinstance(node, ast.Call) else None
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called not in {"print", "debug", "info", "warning", "error", "critical", "exception"}:
                continue
            assert isinstance(node, ast.Call)
            if any(isinstance(n, ast.Name) and n.id == name for arg in node.args for n in ast.walk(arg)):
                for arg in node.args:
                    text = "".join(str(v.value) if isinstance(v, ast.Constant) else placeholder
                                   for v in (arg.values if isinstance(arg, ast.JoinedStr) else [arg]))
                    found.append((relative, text))
    return found
