"""DMV-Bench memory stages' config: the architectures (replay) and the recall probes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec


def _all_variants() -> tuple[ComponentSpec, ...]:
    from vismem.memory.agent.variants import list_variants

    return tuple(ComponentSpec(name=n) for n in list_variants())


class MemoryConfig(Frozen):
    """The memory architectures replayed from the cached trajectories (the ``replay`` stage)."""

    enabled: bool = Field(True, description="Run the replay stage when the run's stage list includes it.")
    architectures: tuple[ComponentSpec, ...] = Field(
        default_factory=_all_variants,
        description=(
            "Architectures to replay and probe: variant names from memory/agent/variants/ (nomemory, textonly, "
            "caption, dualmem, dualmem-a0.5, ..., worldmm-lite, mma-lite, m2a-lite) or {name: FAMILY, args}; "
            "default: every variant (the paper's Table 2 grid and the Table 4 / Fig. 7 ablations)."),
    )
    components: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Component specs laid over every architecture that uses them, e.g. {captioner: catalogue, "
            "visual_encoder: pocket-clip} (local stand-ins for Gemini 2.5 Flash and SigLIP-2); keys a family "
            "lacks are ignored. Empty: each variant's own (the paper's) components."),
    )
    feature_batch_size: int = Field(32, ge=1, description="Items per feature-extraction batch (one model call).")
    feature_actors: int = Field(1, ge=1, description="Ray Data actors per feature model (one model copy each).")
    feature_gpus: float = Field(0.0, ge=0, description="GPUs per feature actor (a cluster's captioner / encoder replicas).")
    features_on_ray: bool | None = Field(
        None, description="Compute features as Ray Data jobs (True) or in the driver (False); None: Ray above 2,000 items.")

    @field_validator("architectures", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, (str, dict)) else v

    @field_validator("architectures")
    @classmethod
    def _distinct(cls, v: tuple[ComponentSpec, ...]) -> tuple[ComponentSpec, ...]:
        keys = [s.key for s in v]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"architectures listed twice: {dup}")
        if not v:
            raise ValueError("give at least one architecture")
        return v


class ProbesConfig(Frozen):
    """Recall probes over the replayed banks (the ``probes`` stage; official f2_online_ic)."""

    enabled: bool = Field(True, description="Run the probes stage when the run's stage list includes it.")
    J: tuple[int, ...] | None = Field(
        None, description="Chain lengths to score, each <= encode.J (paper: 5, 10, 15; the pilot 50); None: encode.J. "
        "Exhaustive probes of a shorter chain are those of the longer chain recalled before session J, so they "
        "are run once and shared.")
    mc: int | None = Field(
        None, ge=1, description="Monte Carlo probes: at most M per reach and chain (the J = 50 pilot; about 10 in the "
        "paper); None: every probe (exhaustive).")
    mc_seed: str = Field("f2.mc.v6", min_length=1, description="Seed string of the Monte Carlo draws (official f2.mc.v6).")
    backends: tuple[ComponentSpec, ...] | None = Field(
        None, description="The VLM that recalls: one for every encode back-end, or one per back-end (same order); "
        "None: the browsing back-ends themselves (the paper). Locally: scripted-recall, a stand-in that opens the "
        "first recalled product.")
    max_steps: int = Field(8, ge=1, le=64, description="Recall steps per probe (official 8).")
    fetch_k: int = Field(10, ge=1, description="Items fetched from the architecture per step (official 10).")
    keep_k: int = Field(5, ge=1, description="Items kept after de-duplication by product (official 5).")
    max_tokens: int = Field(512, ge=1, le=32_768, description="Max completion tokens per recall step (official 512).")
    env: Literal["browser", "http"] | None = Field(
        None, description="How probe pages are fetched (browser: Chromium; http: plain HTTP); None: encode.env.")
    workers: int | None = Field(None, ge=1, description="Ray Data probe actors (each with its own shop); None: ray.concurrency.")
    on_ray: bool = Field(True, description="Run probes as a Ray Data actor job (False: in the driver, for tests).")
    max_failed_calls: float = Field(
        0.5, ge=0.0, le=1.0,
        description="Largest share of a probe unit's recall-VLM calls that may fail for the unit to count: a unit "
        "with more failed calls is not cached, the stage ends partial and a re-run retries it (as encode.max_failed_calls).")

    @field_validator("J")
    @classmethod
    def _sorted(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is None:
            return v
        if not v or any(j < 2 for j in v):
            raise ValueError("every J must be >= 2 (a chain of one session has no probes)")
        return tuple(sorted(set(v)))

    @field_validator("backends", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, (str, dict)) else v
