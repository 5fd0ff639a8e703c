"""MemShot stage config (owned by the MemShot pipeline; extend here)."""

from __future__ import annotations

from pydantic import Field

from pipelines.configs.base import Frozen


class MemShotConfig(Frozen):
    """Dialogue memory shots, retrieval, answers and judged scores."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
