"""Report stage config (owned by analysis; extend here)."""

from __future__ import annotations

from pydantic import Field

from pipelines.configs.base import Frozen


class ReportConfig(Frozen):
    """Tables, statistics, figures and the HTML/Markdown report."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
