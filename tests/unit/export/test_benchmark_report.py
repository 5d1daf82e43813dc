"""The project's model of the Benchmark Report against the published one: the schema committed byte for byte with
its source, every class and field of the model present in it, and the units each field takes narrowed as llm-d's
own validators narrow them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from harness.export import BR_SCHEMA_PATH, BR_VERSION, BenchmarkReport
from harness.export.benchmark_report import (
    BR_SCHEMA_SOURCE_PATH,
    AggregateLatency,
    Observability,
    Statistics,
    TimeStatistics,
    TokenLatencyStatistics,
)

PUBLISHED: dict[str, Any] = json.loads(BR_SCHEMA_PATH.read_text())


def test_the_schema_is_the_published_file_its_source_names() -> None:
    source = json.loads(BR_SCHEMA_SOURCE_PATH.read_text())
    assert hashlib.sha256(BR_SCHEMA_PATH.read_bytes()).hexdigest() == source["sha256"]
    assert source["repository"] == "https://github.com/llm-d/llm-d-benchmark" and len(source["commit"]) == 40
    assert source["version"] == BR_VERSION == PUBLISHED["properties"]["version"]["default"]
    assert PUBLISHED["title"] == f"Benchmark Report v{BR_VERSION}"


def _published_name(model: type[BaseModel]) -> str:
    return "Statistics" if issubclass(model, Statistics) else model.__name__


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every model class reachable from ``model``'s fields, the harness's own extension (``metadata``) excluded."""
    seen[model.__name__] = model
    for name, field in model.model_fields.items():
        if model is Observability and name == "metadata":
            continue
        for inner in _inner_models(field.annotation):
            if inner.__name__ not in seen:
                _models(inner, seen)
    return seen


def _inner_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _inner_models(arg)]


def test_every_class_and_field_of_the_model_is_in_the_published_schema() -> None:
    models = _models(BenchmarkReport, {})
    assert {"Run", "InferenceEngine", "LoadStandardized", "AggregateLatency", "ResourceMetrics"} <= set(models)
    defs = PUBLISHED["$defs"]
    for name, model in models.items():
        published = PUBLISHED if model is BenchmarkReport else defs[_published_name(model)]
        extension = {"metadata"} if model is Observability else set()
        missing = set(model.model_fields) - set(published["properties"]) - extension
        assert not missing, f"{name}: {missing} are not in the published {_published_name(model)}"
        required = set(published.get("required", ()))
        optional_here = {n for n, f in model.model_fields.items() if not f.is_required() and f.default is None}
        assert not required & optional_here, f"{name}: the published schema requires {required & optional_here}"


def test_the_metadata_extension_sits_where_the_published_schema_takes_extra_keys() -> None:
    assert PUBLISHED["$defs"]["Observability"]["additionalProperties"] is True
    assert "metadata" not in PUBLISHED["$defs"]["Observability"]["properties"]


def test_units_are_those_llm_d_s_validators_accept_for_the_field() -> None:
    assert TimeStatistics(units="s", mean=1.0).units == "s"
    with pytest.raises(ValidationError):
        TimeStatistics(units="ms/token", mean=1.0)
    with pytest.raises(ValidationError):
        TokenLatencyStatistics(units="ms", mean=1.0)
    with pytest.raises(ValidationError):
        AggregateLatency.model_validate({"time_to_first_token": {"units": "tokens/s", "mean": 1.0}})
    published_units = set(PUBLISHED["$defs"]["Units"]["enum"])
    for model in (TimeStatistics, TokenLatencyStatistics):
        assert set(model.model_fields["units"].annotation.__args__) <= published_units


def test_keys_the_published_schema_does_not_have_are_refused() -> None:
    with pytest.raises(ValidationError):
        AggregateLatency.model_validate({"tail_latency": {"units": "ms", "mean": 1.0}})
    with pytest.raises(ValidationError):
        BenchmarkReport.model_validate({"run": {"uid": "u"}, "results": {}, "metrics": {}})
    assert BenchmarkReport.model_validate({"run": {"uid": "u"}, "results": {}}).dump() == {
        "version": BR_VERSION, "run": {"uid": "u"}, "results": {}}
