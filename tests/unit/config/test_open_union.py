from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.config.open_union import OpenUnion


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Apple(_Strict):
    kind: Literal["apple"] = "apple"
    size: int


class Pear(_Strict):
    kind: Literal["pear"] = "pear"
    ripe: bool = False


class Plum(_Strict):
    kind: Literal["plum"] = "plum"


def _fruits() -> OpenUnion[_Strict]:
    fruits: OpenUnion[_Strict] = OpenUnion("kind")
    fruits.register(Apple)
    fruits.register(Pear)
    return fruits


def _errors(adapter: TypeAdapter[Any], value: object) -> list[tuple[str, tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as info:
        adapter.validate_python(value)
    return [(e["type"], e["loc"], e["msg"]) for e in info.value.errors()]


@pytest.mark.parametrize("value", [{"kind": "apple", "size": "big", "typo": 1}, {"kind": "fig"}, {"size": 1}, 3,
                                   {"kind": "pear", "ripe": "maybe"}])
def test_errors_read_as_the_closed_union_s(value: object) -> None:
    closed: TypeAdapter[Any] = TypeAdapter(Annotated[Apple | Pear, Field(discriminator="kind")])
    open_: TypeAdapter[Any] = TypeAdapter(Annotated[_Strict, _fruits()])
    assert _errors(open_, value) == _errors(closed, value)


def test_a_member_registered_later_is_accepted() -> None:
    fruits = _fruits()
    adapter: TypeAdapter[Any] = TypeAdapter(dict[str, Annotated[_Strict, fruits]])  # built before Plum registers
    fruits.register(Plum)
    assert adapter.validate_python({"a": {"kind": "plum"}}) == {"a": Plum()}
    assert adapter.dump_python({"a": Apple(size=2)}) == {"a": {"kind": "apple", "size": 2}}
    assert "'plum'" in _errors(adapter, {"a": {"kind": "fig"}})[0][2]  # the unknown tag lists it


def test_a_taken_tag_or_a_member_without_a_literal_tag_is_refused() -> None:
    fruits = _fruits()
    with pytest.raises(ValueError, match="kind 'apple' is already registered by .*Apple"):
        fruits.register(Apple)

    class Loose(_Strict):
        kind: str = "loose"

    with pytest.raises(TypeError, match="must declare kind: Literal"):
        fruits.register(Loose)
    assert fruits.variants() == (Apple, Pear)


def test_the_json_schema_is_the_closed_union_s() -> None:
    closed: TypeAdapter[Any] = TypeAdapter(Annotated[Apple | Pear, Field(discriminator="kind")])
    open_: TypeAdapter[Any] = TypeAdapter(Annotated[_Strict, _fruits()])
    for mode in ("validation", "serialization"):
        assert open_.json_schema(mode=mode) == closed.json_schema(mode=mode)
