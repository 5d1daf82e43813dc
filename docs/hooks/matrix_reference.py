"""mkdocs hook: the matrix reference page (``reference/matrix.md``), generated at build time from the config models.

Every model reachable from ``harness.config.matrix.Matrix`` gets a section (anchor: the class name in lower case)
and every key a row (anchor: ``<class>.<key>``) with its type, default and description, read from pydantic's JSON
schema. Nothing is committed: a renamed key changes the page, and a prose link to the old anchor fails
``mkdocs build --strict`` (``validation.anchors: warn`` in mkdocs.yml).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

PAGE = "reference/matrix.md"
ROOT = "Matrix"
INTRO = """# Matrix reference

Generated from the config models' JSON schema (`harness.config.matrix.Matrix.model_json_schema()`) each time the
docs are built, so it always matches the code. Every model forbids unknown keys. Writing a matrix step by step:
[Writing a matrix](../matrix.md).
"""


def _ref(schema: dict[str, Any]) -> str | None:
    return schema["$ref"].rsplit("/", 1)[-1] if "$ref" in schema else None


def _type(schema: dict[str, Any]) -> str:
    """A field's type in words, with a link to the section of every model it names."""
    if name := _ref(schema):
        return f"[{name}](#{name.lower()})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " | ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for union in ("oneOf", "anyOf"):
        if union in schema:
            return " | ".join(_type(s) for s in schema[union])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of name → {_type(schema['additionalProperties'])}"
    bounds = [f"{op} {schema[key]}" for key, op in (("exclusiveMinimum", ">"), ("minimum", "≥"),
                                                     ("exclusiveMaximum", "<"), ("maximum", "≤")) if key in schema]
    pattern = [f"matching `{schema['pattern']}`"] if "pattern" in schema else []
    return ", ".join([" ".join([str(kind), *bounds[:1]]), *bounds[1:], *pattern])


def _models(cls: type[BaseModel], found: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every model class reachable from ``cls`` by its schema name, for the defaults a factory makes."""

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.__name__ not in found:
                _models(annotation, found)
        else:
            for arg in get_args(annotation):
                visit(arg)

    found[cls.__name__] = cls
    for field in cls.model_fields.values():
        visit(field.annotation)
    for subclass in cls.__subclasses__():  # kinds a base class stands for (a registry of workload kinds)
        visit(subclass)
    return found


def _default(owner: type[BaseModel] | None, name: str, schema: dict[str, Any], required: list[str]) -> str:
    if name in required:
        return "**required**"
    if "default" in schema:
        value = schema["default"]
    elif owner is not None and name in owner.model_fields:  # a default_factory: the schema leaves it out
        value = to_jsonable_python(owner.model_fields[name].get_default(call_default_factory=True))
    else:
        return "its own defaults"
    return f"`{json.dumps(value, separators=(', ', ': '))}`"


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, and ``<`` outside code spans kept from reading as HTML."""
    parts = " ".join(text.split()).split("`")
    parts[::2] = [p.replace("<", "&lt;").replace(">", "&gt;") for p in parts[::2]]
    return "`".join(parts).replace("|", "\\|")


def _walk(schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """Model names in the order a reader meets them from the root, each once."""
    order: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if (name := _ref(node)) and name not in order:
                order.append(name)
                visit(defs[name])
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema.get("properties", {}))
    return order


def _section(name: str, schema: dict[str, Any], owner: type[BaseModel] | None) -> list[str]:
    lines = [f"## {name} {{#{name.lower()}}}", ""]
    if description := schema.get("description"):
        lines += [_cell(description.replace("``", "`")), ""]
    if union := schema.get("oneOf") or schema.get("anyOf"):
        key = schema.get("discriminator", {}).get("propertyName")
        lines += [f"One of {', '.join(_type(s) for s in union)}" + (f", told apart by `{key}`." if key else "."), ""]
    properties = schema.get("properties", {})
    if properties:
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        required = schema.get("required", [])
        for key, field in properties.items():
            anchor = f'<a id="{name.lower()}.{key}"></a>'
            lines.append(f"| {anchor}`{key}` | {_cell(_type(field))} | {_cell(_default(owner, key, field, required))} "
                         f"| {_cell(field.get('description', ''))} |")
        lines.append("")
    return lines


def render() -> str:
    from harness.config.matrix import Matrix

    schema = Matrix.model_json_schema()
    defs = schema.get("$defs", {})
    classes = _models(Matrix, {})
    lines = [INTRO, *_section(ROOT, schema, Matrix)]
    for name in _walk(schema, defs):
        lines += _section(name, defs[name], classes.get(name))
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    if (Path(config.docs_dir) / PAGE).exists():
        raise PluginError(f"docs/{PAGE} is generated at build time (docs/hooks/matrix_reference.py): delete it")
    files.append(File.generated(config, PAGE, content=render()))
    return files
