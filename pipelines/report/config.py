"""Report stage config (owned by analysis; extend here)."""

from __future__ import annotations

from typing import Optional

from pydantic import Field, field_validator

from vismem.core.config import Frozen


class ReportConfig(Frozen):
    """Tables, statistics, figures and the HTML/Markdown report."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
    n_resamples: int = Field(10_000, ge=100, le=1_000_000,
                             description="Bootstrap resamples for naive and cluster CIs (the paper uses 10,000).")
    n_bins: int = Field(8, ge=1, le=100,
                        description="Equal-width bins per (back-end, J) for the bank-size figure (encoding-position "
                                    "bins are the visit sessions, as in the paper).")
    compare: Optional[tuple[str, str]] = Field(
        None, description="Architectures (A, B) for the paired permutation test, e.g. [dualmem, m2a-lite]; "
                          "default: the two best by mean TSR.")
    common_probes: bool = Field(True, description="Score each (back-end, J) on the probes every architecture answered.")
    exclude_categories: tuple[str, ...] = Field(
        ("adversarial",), description="MemShot question categories left out of the tables (LoCoMo's adversarial, "
                                      "as in the paper).")

    pool_first: tuple[int, ...] = Field(
        (), json_schema_extra={"identity": "execution"}, description="For a report over several runs (`vismem report RUN RUN ...`): the J cells into which a run "
                        "without that J pools the first J sessions of its longer chains (the paper: [5], the J = 50 "
                        "pilot's first 5 sessions beside the main run's J = 5 chains). A run's own report never reads it: not part of "
                        "the run id.")

    @field_validator("pool_first")
    @classmethod
    def _pool_js(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(j < 2 for j in v):
            raise ValueError("every pool_first J must be >= 2")
        return tuple(sorted(set(v)))

    @field_validator("compare")
    @classmethod
    def _distinct(cls, v: Optional[tuple[str, str]]) -> Optional[tuple[str, str]]:
        if v is not None and v[0] == v[1]:
            raise ValueError("compare needs two different architectures")
        return v
