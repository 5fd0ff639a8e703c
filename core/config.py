"""Shared base for every config model: frozen, no unknown fields, described fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of all run-config models.

    ``extra="forbid"`` makes a typo an error instead of a silently ignored field; ``frozen``
    makes a loaded config hashable into a run id and safe to share across Ray workers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
