"""Turn pydantic's validation errors into one ConfigError a person can act on without a traceback.

Each problem is reported as ``key.path: what is wrong`` plus a fix; for an unknown key the fix lists the keys
that are valid at that place, found by walking the schema along the error's path.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from harness.config.names import NAME_ERROR, NAME_FIX
from harness.config.open_union import OpenUnion
from harness.errors import ConfigError

_FIXES = {
    "missing": "add the key",
    "greater_than": "use a larger number",
    "greater_than_equal": "use a larger number",
    "less_than": "use a smaller number",
    "literal_error": "use one of the values listed",
    "union_tag_invalid": "use one of the values listed",
    "string_pattern_mismatch": "use lower-case letters, digits, '.', '_' or '-' (64 at most)",
    NAME_ERROR: NAME_FIX,
    "too_short": "give at least one entry",
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Pydantic model classes reachable from an annotation (through unions, tuples, dicts, Annotated)."""
    if typing.get_origin(annotation) is typing.Annotated:
        # An open union's members are the models registered by now, where a closed one names them in its arguments.
        unions = [m for m in annotation.__metadata__ if isinstance(m, OpenUnion)]
        if unions:
            return [model for union in unions for model in union.variants()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        root = annotation.model_fields.get("root")
        return _models_in(root.annotation) if root is not None else [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _allowed_keys(schema: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """Valid keys of the mapping at ``path``, best effort (empty when the path cannot be followed)."""
    candidates: list[type[BaseModel]] = [schema]
    for part in path:
        if isinstance(part, int):
            continue  # list index: same element type
        nxt: list[type[BaseModel]] = []
        for model in candidates:
            field = model.model_fields.get(str(part))
            if field is not None:
                nxt.extend(_models_in(field.annotation))
            else:  # a union tag ('cpu', 'mtp') or a dict key ('chat-1k1k'): keep the models that carry it
                nxt.extend(m for m in candidates if m.__name__.lower().endswith(str(part).replace("_", "")))
                nxt.extend(m for m in candidates if isinstance(part, str) and str(part) not in m.model_fields)
        candidates = list(dict.fromkeys(nxt)) or candidates
    keys: list[str] = []
    for model in candidates:
        keys.extend(k for k in model.model_fields if k not in keys and k != "root")
    return keys


def _is_tag_of(model: type[BaseModel], part: str) -> bool:
    """True when ``part`` is the value of one of the model's Literal fields (a discriminated union's tag)."""
    return any(typing.get_origin(f.annotation) is typing.Literal and f.default == part
               for f in model.model_fields.values())


def _without_union_tags(schema: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The error path as the user wrote it: pydantic inserts a discriminated union's tag ('random', 'gpu')."""
    kept: list[int | str] = []
    candidates: list[type[BaseModel]] = [schema]
    for part in loc:
        if isinstance(part, str) and len(candidates) > 1:
            tagged = [m for m in candidates if _is_tag_of(m, part)]
            if tagged:
                candidates = tagged
                continue
        kept.append(part)
        if isinstance(part, str):
            fields = [m.model_fields[part] for m in candidates if part in m.model_fields]
            candidates = [x for f in fields for x in _models_in(f.annotation)] or candidates
    return tuple(kept)


def _describe(error: ErrorDetails, schema: type[BaseModel]) -> tuple[str, str, str]:
    raw = tuple(error["loc"])
    if raw and raw[-1] == "[key]":  # a refused dict key: pydantic says which one by this marker after it
        raw = raw[:-1]
    loc = _without_union_tags(schema, raw)
    key = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(schema, raw[:-1])
        hint = f"; valid keys here: {', '.join(allowed)}" if allowed else ""
        return key, f"unknown key {str(loc[-1])!r}", f"remove it or correct its spelling{hint}"
    message = error["msg"].removeprefix("Value error, ")
    return key, message, _FIXES.get(error["type"], "correct the value (see matrices/default.yaml for an example)")


def config_error_from_validation(source: str, exc: ValidationError, schema: type[BaseModel]) -> ConfigError:
    problems = [_describe(e, schema) for e in exc.errors()]
    key, problem, fix = problems[0]
    if len(problems) > 1:
        problem += "".join(f"\n  also {k}: {p} (fix: {f})" for k, p, f in problems[1:])
    return ConfigError(source, key, problem, fix)


__all__ = ["config_error_from_validation"]
