from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from harness.config.workloads import (
    MAX_TOKENS,
    NAMED_SHAPES,
    AgentWorkload,
    DatasetWorkload,
    RandomWorkload,
    SharedPrefixWorkload,
    ToolCallsWorkload,
    TraceWorkload,
    Workload,
    WorkloadBase,
)

ADAPTER: TypeAdapter[object] = TypeAdapter(Workload)


@pytest.mark.parametrize("shape", sorted(NAMED_SHAPES))
def test_inferencex_shapes_by_name(shape: str) -> None:
    workload = RandomWorkload(shape=shape)  # type: ignore[arg-type]
    assert (workload.input_tokens, workload.output_tokens) == NAMED_SHAPES[shape]
    assert workload.range_ratio == 0.8
    assert RandomWorkload(shape=shape, range_ratio=0.0).range_ratio == 0.0  # type: ignore[arg-type]


def test_a_shape_and_conflicting_lengths_are_an_error() -> None:
    with pytest.raises(ValidationError, match="shape 1k/8k means output_tokens=8192"):
        RandomWorkload(shape="1k/8k", output_tokens=1024)
    with pytest.raises(ValidationError):
        RandomWorkload(shape="2k/2k")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        RandomWorkload()  # type: ignore[call-arg]


def test_kinds_are_told_apart_by_kind() -> None:
    assert isinstance(ADAPTER.validate_python({"kind": "random", "shape": "8k/1k"}), RandomWorkload)
    assert isinstance(ADAPTER.validate_python({"kind": "dataset", "path": "x.jsonl"}), DatasetWorkload)
    assert isinstance(ADAPTER.validate_python({"kind": "shared-prefix"}), SharedPrefixWorkload)
    assert isinstance(ADAPTER.validate_python({"kind": "tool-calls"}), ToolCallsWorkload)
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "tool-calls", "typo": 1})


def test_identity_leaves_later_fields_out_at_their_defaults() -> None:
    plain = RandomWorkload(input_tokens=128, output_tokens=64)
    assert plain.identity() == {"kind": "random", "input_tokens": 128, "output_tokens": 64, "range_ratio": 0.0,
                                "num_requests": 32, "warmup_requests": 2, "api": "completions", "ignore_eos": True,
                                "temperature": 0.0, "seed": 0}  # exactly the fields ids were first hashed from
    assert RandomWorkload(shape="1k/1k").identity()["shape"] == "1k/1k"


def test_longest_sequence_is_known_before_prompts_exist() -> None:
    assert RandomWorkload(input_tokens=100, output_tokens=10, range_ratio=0.5).max_sequence_tokens() == 165
    assert SharedPrefixWorkload(prefix_tokens=500, question_tokens=20, output_tokens=30).max_sequence_tokens() == 550
    assert DatasetWorkload(path="x.jsonl").max_sequence_tokens() is None


def test_a_token_count_no_model_serves_is_refused_before_any_prompt_is_drawn() -> None:
    with pytest.raises(ValidationError, match="input_tokens"):
        RandomWorkload(input_tokens=81_329_859, output_tokens=64)
    with pytest.raises(ValidationError, match="output_tokens"):
        RandomWorkload(input_tokens=128, output_tokens=MAX_TOKENS + 1)
    assert RandomWorkload(input_tokens=MAX_TOKENS, output_tokens=1).input_tokens == MAX_TOKENS


REQUIRED = {"random": {"input_tokens": 8, "output_tokens": 8}, "dataset": {"path": "x.jsonl"},
            "trace": {"path": "x.jsonl"}}
TOKEN_FIELDS = [(model, field) for model in (RandomWorkload, DatasetWorkload, SharedPrefixWorkload,
                                             ToolCallsWorkload, AgentWorkload, TraceWorkload)
                for field in model.model_fields if field.endswith("tokens")]


@pytest.mark.parametrize(("model", "field"), TOKEN_FIELDS, ids=lambda x: getattr(x, "__name__", x))
def test_every_workload_kind_bounds_its_token_counts(model: type[WorkloadBase], field: str) -> None:
    kind = model.model_fields["kind"].default
    base = {"kind": kind, **REQUIRED.get(kind, {})}
    with pytest.raises(ValidationError, match=field):
        ADAPTER.validate_python({**base, field: MAX_TOKENS + 1})
    assert getattr(ADAPTER.validate_python({**base, field: MAX_TOKENS}), field) == MAX_TOKENS
