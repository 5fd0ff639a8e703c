"""DMV-Bench encoding-chain stage config (owned by the agents; extend here)."""

from __future__ import annotations

from pydantic import Field

from pipelines.configs.base import Frozen


class EncodeConfig(Frozen):
    """Agents browsing chains of sessions; trajectories cached in the store."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
