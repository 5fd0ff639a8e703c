"""DMV-Bench catalogue stage config (owned by the storefront; extend here)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipelines.configs.base import Frozen


class CatalogConfig(Frozen):
    """The storefront catalogue and its product images."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
    colour_order: Literal["seeded", "official"] = Field(
        "seeded",
        description=(
            "How cue colours map to a collection's ten cards. 'seeded' permutes the colours per "
            "collection from the run seed (fixes the official flaw where card position == colour "
            "index, card 01 always red); 'official' reproduces the released assignment exactly."
        ),
    )
