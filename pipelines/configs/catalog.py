"""DMV-Bench catalogue stage config (owned by the storefront; extend here)."""

from __future__ import annotations

from pydantic import Field

from pipelines.configs.base import Frozen


class CatalogConfig(Frozen):
    """The storefront catalogue and its product images."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
