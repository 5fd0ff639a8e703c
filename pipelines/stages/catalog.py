"""The `catalog` stage (placeholder until its capability lands: records that nothing ran)."""

from __future__ import annotations

from typing import Any


def run(ctx: Any) -> dict[str, Any]:
    """Not implemented yet: returns a summary saying so (never pretends to have run)."""
    return {"status": "not-implemented"}
