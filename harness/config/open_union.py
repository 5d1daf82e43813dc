"""A discriminated union whose members register themselves, so that a variant defined outside the package is
validated like a built-in one.

pydantic's ``Annotated[A | B, Field(discriminator="kind")]`` is closed: its members are fixed when the model that
uses it is built, at import. ``Annotated[Base, OpenUnion("kind")]`` is looked up when a value is validated instead:
it validates through pydantic's own discriminated union of the members registered by then, so an unknown tag, a
missing one and a bad key read exactly as the closed union's errors do (the member's tag in the error path
included, which ``config.errors`` strips as it does for a closed union). Members register with ``register``, a
class decorator that takes the tag from the member's ``Literal`` field; a tag already taken is refused.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, Generic, Literal, TypeVar, Union

from pydantic import BaseModel, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

Member = TypeVar("Member", bound=BaseModel)
MemberClass = TypeVar("MemberClass", bound=type[BaseModel])


class OpenUnion(Generic[Member]):
    """The members registered under one tag field, in registration order; put it in ``Annotated`` metadata."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self._members: dict[str, type[Member]] = {}
        self._adapter: tuple[tuple[type[Member], ...], TypeAdapter[Member]] | None = None

    def register(self, member: MemberClass) -> MemberClass:
        """Class decorator: add a model whose tag field is ``Literal["name"] = "name"`` under that name."""
        model: type[BaseModel] = member
        field = model.model_fields.get(self.tag)
        name = field.default if field is not None else None
        if field is None or typing.get_origin(field.annotation) is not Literal or not isinstance(name, str):
            raise TypeError(f"{member.__qualname__} must declare {self.tag}: Literal[\"name\"] = \"name\"")
        if name in self._members:
            taken = self._members[name]
            raise ValueError(f"{self.tag} {name!r} is already registered by {taken.__module__}.{taken.__qualname__}")
        self._members[name] = typing.cast(type[Member], member)
        return member

    def variants(self) -> tuple[type[Member], ...]:
        """Every registered member (``config.errors`` lists their keys where a key is unknown)."""
        return tuple(self._members.values())

    def union(self) -> Any:
        """The closed discriminated union of the members registered now."""
        return Annotated[Union[self.variants()], Field(discriminator=self.tag)]  # noqa: UP007 (a runtime tuple)

    def validate(self, value: Any) -> Member:
        members = self.variants()
        if self._adapter is None or self._adapter[0] != members:  # rebuilt only when a member registered since
            self._adapter = (members, TypeAdapter(self.union()))
        return self._adapter[1].validate_python(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        # The JSON schema (the docs' matrix reference) shows the members registered when the using model is built.
        return core_schema.no_info_plain_validator_function(
            self.validate, json_schema_input_schema=handler.generate_schema(self.union()))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # A value serializes as the member it is, so both modes show that union (pydantic's plain-validator schema
        # has none to show in serialization mode).
        return handler(typing.cast(dict[str, Any], schema)["json_schema_input_schema"])


__all__ = ["OpenUnion"]
