"""DMV-Bench encoding-chain stage config (owned by the agents; extend here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec


class EncodeConfig(Frozen):
    """Agents browsing chains of sessions; trajectories cached in the store.

    Chain ``i`` uses seed ``first_seed + i`` (default: the run seed, so seed 0 gives the official
    chain seeds 0..N-1); session ``j`` of chain ``seed`` follows the official seeding
    (``vismem.agents.chains``). The storefront (colour permutation) uses the run seed.
    """

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")
    chains: int = Field(1, ge=1, le=10_000, description="Number of chains N; chain i has seed first_seed + i.")
    first_seed: int | None = Field(
        None, ge=0, description="Seed of the first chain; None = the run seed (official chains 0..N-1 at seed 0)."
    )
    J: int = Field(2, ge=1, le=1_000, description="Sessions per chain (a prefix of every longer chain).")
    backends: tuple[ComponentSpec, ...] = Field(
        (ComponentSpec(name="scripted-shopper"),),
        min_length=1,
        description=(
            "VLMs that browse (each its own trajectories): a {name, args} spec from serve.vlm.VLMS "
            "(`scripted-shopper`: deterministic stand-in, its `seed` defaults to the run seed; "
            "`openai`: vLLM / Ray Serve LLM / hosted API; `transformers`: local checkpoint), or a "
            "model variant from serve/models/ by name (`qwen2.5-vl-7b`, `gemini-2.5-flash`), "
            "optionally as {model: NAME, args: overrides}."
        ),
    )
    observation: Literal["product_image", "screenshot"] = Field(
        "product_image",
        description=(
            "Image shown to the agent each step: the product's catalogue image on product pages "
            "and none elsewhere (official f2 encoding), or a viewport screenshot of every page."
        ),
    )
    page_text: Literal["url", "page"] = Field(
        "url",
        description=(
            "Title/Description lines of [Current page]: the URL (official f2 observation) or the "
            "storefront's own title and description."
        ),
    )
    protocol: Literal["official", "fixed"] = Field(
        "fixed",
        description=(
            "Dialogue protocol (encoding and recall): `official` = the published prompts byte for byte (4 styles, "
            "N=0..3, URL hint with the category noun) and an unparseable reply enters the history only as `noop`; "
            "`fixed` = the corrected texts (10 styles, N=0..9, slug in the URL hint) and the agent is told its reply "
            "had no valid action. Part of the trajectory and probe cache keys."),
    )
    env: Literal["browser", "http"] = Field(
        "browser",
        description=(
            "How pages are fetched: real Chromium via Playwright (the protocol), or plain HTTP with "
            "the same click_index semantics (a fast path for tests; same pages, same trajectories)."
        ),
    )
    images: str | dict[str, Any] = Field(
        "catalog",
        description=(
            "Product images the storefront serves: `catalog` = the catalogue stage's images (read "
            "from the store when this run's catalog stage wrote them, else rendered on demand by "
            "the same source with the same settings), or an image-source spec (a name such as "
            "`placeholder`, or {name, args}) from env.storefront.imagesource."
        ),
    )
    max_tokens: int = Field(512, ge=1, le=32_768, description="Max completion tokens per agent step (official 512).")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature of the agent (0 = greedy).")
    workers: int | None = Field(
        None, ge=1, description="Ray Data actors (each with its own storefront and browser); None = ray.concurrency."
    )
    step_timeout_s: float = Field(
        30.0, gt=0, description="Browser navigation timeout per action, in seconds (official 30)."
    )
    max_failed_calls: float = Field(
        0.5, ge=0.0, le=1.0,
        description=(
            "Largest share of a session's model calls that may fail (after the backend's retries) for the "
            "session to count: a session with more failed calls (an endpoint outage) is recorded as failed, never "
            "committed to the trajectory cache, the stage ends partial and a re-run retries it. 0.5: more than "
            "half failed = failed; 0: any failed call fails the session; 1: never."),
    )

    @field_validator("backends", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        # A single spec (a bare name or one mapping) is a list of one.
        return [v] if isinstance(v, (str, dict)) else v
