"""Shared base for every config model: frozen, no unknown fields, described fields, strict values."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

#: Integers a config may hold: what a Parquet int64 column (and numpy's seeding) can carry.
INT_BOUND = 2**63 - 1


def _kinds(annotation: Any) -> set[type]:
    """The scalar types ``annotation`` accepts at its top level (``int | None`` -> {int, NoneType})."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_kinds(a) for a in typing.get_args(annotation)))
    if origin is typing.Literal:
        return {type(v) for v in typing.get_args(annotation)}
    if origin is typing.Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin is not None:  # tuple[int, ...], dict[str, Any]: the container's own type
        return {origin}
    return {annotation} if isinstance(annotation, type) else {object}


def _items(annotation: Any) -> Any:
    """The element annotation of a ``tuple[X, ...]`` / ``list[X]`` among ``annotation``'s
    alternatives (None when it has none)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        found = [e for a in typing.get_args(annotation) if (e := _items(a)) is not None]
        return found[0] if found else None
    if origin in (tuple, list, set, frozenset):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return args[0] if len(set(map(repr, args))) == 1 else None
    return None


def strict_problem(annotation: Any, value: Any) -> str | None:
    """What is wrong with ``value`` for ``annotation`` under the strict rules, or None.

    Pydantic's lax mode reads ``true`` as 1, ``"5"`` as 5 and a 45-digit number as an int; a
    config means what it says, so a bool is not a number, a string is not a number, an integer
    fits in int64, and a list of plain values holds no value twice (``k: [5, 5]`` is a typo).
    """
    kinds = _kinds(annotation)
    if object in kinds or Any in kinds:
        return None
    numeric = kinds & {int, float}
    if isinstance(value, bool) and bool not in kinds and numeric:
        return f"must be a number, not a boolean ({value!r})"
    if isinstance(value, str) and numeric and str not in kinds:
        return f"must be a number, not a string ({value!r})"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT_BOUND:
        return f"integer {str(value)[:20]}... has {len(str(abs(value)))} digits; the bound is {INT_BOUND:,} (int64)"
    item = _items(annotation)
    if item is not None and isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            problem = strict_problem(item, v)
            if problem:
                return f"entry {i}: {problem}"
        plain = [v for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if len(plain) == len(value) and len(set(plain)) < len(plain):
            twice = next(v for i, v in enumerate(plain) if v in plain[:i])
            return f"{twice!r} is given more than once"
    return None


class Frozen(BaseModel):
    """Base of all run-config models.

    ``extra="forbid"`` makes a typo an error instead of a silently ignored field; ``frozen``
    makes a loaded config hashable into a run id and safe to share across Ray workers; the
    strict check (:func:`strict_problem`) refuses a bool or a string where a number goes, an
    integer past int64 and a repeated list entry. A field whose repeats are harmless (merged
    by its own validator) says so with ``json_schema_extra={"repeats": "merged"}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    @field_validator("*", mode="before")
    @classmethod
    def _strict_values(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None:
            return value
        if (field.json_schema_extra or {}).get("repeats") == "merged" and isinstance(value, (list, tuple)):
            return value
        problem = strict_problem(field.annotation, value)
        if problem:
            raise ValueError(problem)
        return value
