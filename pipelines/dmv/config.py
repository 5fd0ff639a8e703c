"""DMV-Bench's stage configs: the catalogue, the encoding chains, the memory architectures
(replay) and the recall probes (the ``catalog``, ``encode``, ``memory`` and ``probes`` sections of
a run config)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from vismem.core.config import Frozen
from vismem.core.registry import ComponentSpec


def _in_flight(units: str) -> Any:
    """The ``in_flight`` field of a stage whose actors run episodes at once (not part of the run id)."""
    return Field(
        None, ge=1, json_schema_extra={"identity": "execution"},
        description=f"{units} at once across all actors of the stage (each actor runs its share in threads, one "
        "page env each): size it to the serving fleet (replicas x ongoing requests). None: the sum of the "
        "back-ends' client limits (the openai backend's max_concurrency), or one per actor for back-ends without "
        "one. Not part of the run id.")


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

    # -- product images (images engineer) ----------------------------------------------------
    image_source: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(name="procedural"),
        description="Image source that produces the product images, a name or {name, args}: 'procedural' "
        "(offline renderer, the local default; args e.g. {salt: v1}), 'official' (the paper's published "
        "with_cue/ and base/ images; args {root: s3://bucket/dmv-images}), or any other name in "
        "vismem.env.storefront.imagesource.IMAGE_SOURCES. `image_source_args` (a mapping) is accepted as input "
        "and merged into image_source.args.",
    )

    @model_validator(mode="before")
    @classmethod
    def _fold_args(cls, data: Any) -> Any:
        # `image_source_args` (the flag --image-root and older configs write it) folds into the
        # one component spec, so the frozen config has a single shape.
        if isinstance(data, dict) and "image_source_args" in data:
            data = dict(data)
            extra = data.pop("image_source_args") or {}
            if not isinstance(extra, dict):
                raise ValueError("image_source_args must be a mapping")
            src = data.get("image_source", "procedural")
            src = {"name": src} if isinstance(src, str) else dict(src)
            src["args"] = {**dict(src.get("args") or {}), **extra}
            data["image_source"] = src
        return data
    image_size: int = Field(512, ge=128, le=2048, description="Side of the square product images in pixels "
                            "(the official set is 512).")
    image_format: Literal["png", "jpeg", "webp"] = Field("png", description="Encoding of the stored images.")
    png_compress_level: int = Field(0, ge=0, le=9, description="Deflate level of the PNG writer (Up "
                                    "filter; core.png): 0, the default, is ISA-L's (~1 ms per photo, the same "
                                    "bytes every time), 1-9 zlib's with the RLE strategy (~25 % smaller, "
                                    "~5x slower).")
    limit: int | None = Field(None, ge=1, description="Generate only the first N variants in catalogue "
                              "order (smoke tests); None = all 1,000.")
    batch_size: int | None = Field(None, ge=1, description="Variants per Ray Data batch (one task renders "
                                   "and uploads a batch). None: the variants to render split into 4 batches "
                                   "per concurrent task (ray.concurrency), at least 10 each: 125 on 2 cores, "
                                   "where each Ray task costs ~60 ms of scheduling (25-variant batches were "
                                   "~25% slower).")
    upload_threads: int = Field(8, ge=1, le=64, description="Concurrent store uploads inside one batch "
                                "(uploads are I/O-bound; rendering holds the CPU).")


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
    in_flight: int | None = _in_flight("Sessions browsed")
    workers: int | None = Field(
        None, ge=1, description="Ray Data actors (each with its own storefront and browser); None = ray.concurrency."
    )
    step_timeout_s: float = Field(
        30.0, gt=0, description="Browser navigation timeout per action, in seconds (official 30)."
    )
    session_retries: int = Field(
        3, ge=0, le=100, json_schema_extra={"identity": "execution"},
        description="Times a session with a failed model call (an outage: the official runner turns it into a "
        "forced navigation) is browsed again on its own until every call has a model answer; one still without "
        "them is not cached (the stage ends partial, a re-run retries it). Not part of the run id.")
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
    feature_gpus: float = Field(0.0, ge=0, description="GPUs per feature actor of a model that runs "
                                "in-process (SigLIP-2, CLIP, a transformers captioner); endpoint clients and CPU models "
                                "never reserve one.")
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


#: The paper's Table 4 rows scored only on its 7-chain ablation subset (no other table needs them).
ABLATION_ONLY = ("dualmem-verb", "dualmem-a0.25", "dualmem-vis", "dualmem-img", "dualmem-cap", "dualmem-vis-img",
                 "dualmem-vis-cap")


class AdaptiveConfig(Frozen):
    """Adaptive probing's stopping rule (``probes.mode: adaptive``; docs/adaptive-probing.md)."""

    width: float = Field(0.1, gt=0, le=1, description="A cell (back-end, J, architecture) is done when its TSR's "
                         "anytime-valid confidence interval (for the exhaustive run's TSR) is at most this wide "
                         "(0.1: +-5 points, about the chain-cluster CI of a J = 50 cell).")
    alpha: float = Field(0.05, gt=0, lt=1, description="Error rate of every interval and of the contrast's decision "
                         "(0.05: 95% intervals).")
    batch: int = Field(32, ge=1, description="Units (chain, recall session) of each back-end scored, for every "
                       "architecture, between two looks at the rule.")
    min_units: int = Field(32, ge=1, description="Units scored before the rule may stop a back-end (its first batch).")
    contrast: tuple[str, str] | None = Field(
        None, description="The headline's paired contrast [A, B]: when its difference's interval excludes 0, A's and "
        "B's cells are done (decided) whatever their width. None: report.compare when it is set, else no contrast.")


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
    in_flight: int | None = _in_flight("Probe units run")
    workers: int | None = Field(None, ge=1, description="Ray Data probe actors (each with its own shop); None: ray.concurrency.")
    on_ray: bool = Field(True, description="Run probes as a Ray Data actor job (False: in the driver, for tests).")
    max_failed_calls: float = Field(
        0.5, ge=0.0, le=1.0,
        description="Largest share of a probe unit's recall-VLM calls that may fail for the unit to count: a unit "
        "with more failed calls is not cached, the stage ends partial and a re-run retries it (as encode.max_failed_calls).")
    probe_retries: int = Field(
        3, ge=0, le=100, json_schema_extra={"identity": "execution"},
        description="Times a probe whose recall episode was cut by a failed call (an outage) is run again on its own "
        "until it has model answers; one still without them fails its unit (not cached, re-run later). An outage is "
        "never scored as a memory failure. Not part of the run id.")

    mode: Literal["exhaustive", "adaptive"] = Field(
        "exhaustive", description="exhaustive: every probe unit (chain, recall session) of every architecture. "
        "adaptive: each back-end's units in a seeded random order (shared by the architectures), scored in batches "
        "until every main-study cell's TSR interval is narrow enough or the headline contrast is decided "
        "(probes.adaptive; not with probes.mc). Units are the exhaustive run's own cached units, so an adaptive run "
        "continued as exhaustive re-scores none.")
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig,
                                     description="The stopping rule of probes.mode adaptive (ignored otherwise).")
    ablation_chains: int | tuple[int, ...] | None = Field(
        None, description="The chain subset the architectures in probes.ablation_architectures are probed on, as the "
        "paper's Table 4 (its ablation rows score the 7 seeded chains of the ablation sweep, a subset of the 25 behind "
        "the Gemini J = 5 cell; the paper does not name them: the first 7, seeds 0-6 as the official runner's "
        "--seed 0 --n-tasks 7 gives, in the `paper` preset): N = each back-end's first N chains (chain i has seed "
        "encode.first_seed + i; fewer when the run has fewer), or a list of chain indices i. Every other architecture "
        "is probed on every chain. A probe unit does not depend on the subset, so subset and full-set runs share "
        "their cached units (none is probed twice). 0: no chain (the J = 50 pilot, which the paper runs without "
        "ablations). None: every architecture on every chain.")
    ablation_architectures: tuple[str, ...] = Field(
        ABLATION_ONLY, description="Architectures (variant names, as in memory.architectures) probed only on "
        "probes.ablation_chains (ignored without it). Default: the Table 4 rows above the paper's rule that no other "
        "table needs; DualMem (Table 2) and the encoder block's dualmem-a0.5 / dualmem-clip, which the paper scores "
        "on the full set, stay on every chain.")

    @model_validator(mode="after")
    def _adaptive_is_exhaustive_units(self) -> "ProbesConfig":
        if self.mode == "adaptive" and self.mc:
            raise ValueError("probes.mode adaptive draws from the exhaustive units: it cannot be combined with probes.mc")
        pair = self.adaptive.contrast
        if pair is not None and pair[0] == pair[1]:
            raise ValueError("probes.adaptive.contrast needs two different architectures")
        return self

    @field_validator("ablation_chains")
    @classmethod
    def _chains(cls, v: int | tuple[int, ...] | None) -> int | tuple[int, ...] | None:
        if isinstance(v, tuple):
            if not v or any(i < 0 for i in v) or len(set(v)) != len(v):
                raise ValueError("give a count N >= 0 or a non-empty list of distinct chain indices >= 0")
            return tuple(sorted(v))
        if v is not None and v < 0:
            raise ValueError("give a count N >= 0 or a non-empty list of distinct chain indices >= 0")
        return v

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
