"""MemShot stage config (owned by the MemShot pipeline; extend here)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from vismem.core.config import Frozen
from vismem.core.errors import ConfigError, did_you_mean
from vismem.core.registry import ComponentSpec
from vismem.serve.weights import DEFAULT_ROOT, check_root


class MemShotConfig(Frozen):
    """Dialogue memory shots, retrieval, answers and judged scores."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")

    # -- data and rendering (env/dialogue loaders, memory/dialogue renderer, pipelines/memshot/render.py) --
    dataset: str = Field(
        "locomo", description="Benchmark to evaluate, a name in vismem.memory.dialogue.datasets: locomo (in data_dir) "
        "or longmemeval (give dataset_path).",
    )
    dataset_path: str | None = Field(
        None, json_schema_extra={"identity": "content"},
        description="The dataset's file, absolute or relative to data_dir; None: the dataset's default location "
        "(LoCoMo: locomo/locomo10.json; LongMemEval is not shipped, so it needs this). The run id takes the "
        "file's content, not its path.",
    )
    conversations: int | None = Field(
        None, ge=1, description="Use only the first N conversations (LoCoMo) or question records (LongMemEval); None: all.",
    )
    variants: tuple[str, ...] = Field(
        ("memshot", "text-rag"), min_length=1,
        description=(
            "Memory-unit variants to build, by name (memory/dialogue/variants/*.yaml): memshot, no-header, "
            "no-render, h512, h1024, full-session, full-session-no-render, h512-no-render, h1024-no-render, "
            "text-rag. Max height, overlap, header and rendering are set per variant."
        ),
    )
    image_format: Literal["png", "webp"] = Field(
        "png",
        description="Lossless shot encoding: png (palette PNG, fastest and smallest here; see memory/dialogue/draw.py) or webp.",
    )
    png_compress_level: int = Field(0, ge=0, le=9, description="Deflate level of PNG shots (core.png): 0 ISA-L (the default: "
                                    "its fastest level, and the one whose output repeats exactly -- see "
                                    "vismem.memory.dialogue.png.SHOT_LEVEL), 1-9 zlib (smaller, several times slower).")
    render_batch_size: int | None = Field(None, ge=1, description="Sessions per Ray Data render task; None: 4 batches "
                                          "per concurrent task (ray.concurrency), at least 4 sessions each.")

    # -- retrieval, answers and judging (MemShot evaluation; see memory/dialogue/retrieval.py) --
    k: tuple[int, ...] = Field(
        (5, 10), min_length=1,
        description="Top-k cut-offs: recall@k is reported for each, and each k is answered (paper: 5 and 10).",
    )
    text_embedder: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(name="minilm"),
        description="Embedder ({name, args} in serve.embed.EMBEDDERS) for text units and their queries.",
    )
    image_embedder: ComponentSpec | None = Field(
        None,
        description=(
            "Multimodal embedder for image units (shots) and their queries; paper: qwen3-vl-embedding "
            "(Qwen3-VL-Embedding-8B). None skips retrieval for image variants (they are still rendered)."
        ),
    )
    extra_retrievers: tuple[ComponentSpec, ...] = Field(
        (), description="Further multimodal retrievers whose recall@k is reported beside the main ones (Fig. 4b's "
        "second family: jina-embeddings-v4): each embeds every variant's units, text and shots, and the questions; "
        "answers use text_embedder / image_embedder only.",
    )
    memories: tuple[ComponentSpec, ...] = Field(
        (), description="DialogueMemory adapters evaluated beside the variants (memory.dialogue.memories): memocr "
        "(summarise-then-render; args.summarizer = an LLM spec, unset = the extractive stand-in), memshot / text-rag "
        "in-process, or an external system with a plugged-in backend (lightmem, memos, memoryos, evermemos). Each "
        "ingests every conversation (construction latency), its units are retrieved for every question and answered.",
    )
    embed_batch_size: int = Field(64, ge=1, description="Items per embedding batch (one model call).")
    embed_actors: int = Field(1, ge=1, description="Ray Data embedding actors (one embedder copy each).")
    embed_gpus: float = Field(0.0, ge=0, description="GPUs per Ray Data embedding actor (paper: 1 for Qwen3-VL-Embedding-8B).")
    embed_on_ray: bool | None = Field(
        None,
        description="Embed as a Ray Data actor-pool job (True) or in the driver (False); None: Ray above 2,000 items.",
    )
    ocr_actors: int = Field(
        2, ge=1, description="Ray Data actors of the OCR job when image_embedder is a pixel reader (ocr-minilm): "
        "one reader each; give the reader one thread per actor.",
    )
    ocr_on_ray: bool = Field(
        True, description="Run a pixel reader's OCR as a Ray Data job (False: in the driver, one reader; tests).",
    )
    exclude_categories: tuple[str, ...] = Field(
        ("adversarial",),
        description="Question categories left out of recall and answers (LoCoMo adversarial is not in the paper's tables).",
    )
    max_questions: int | None = Field(
        None, ge=1, description="Answer at most this many questions per conversation (None: all); recall uses all.",
    )
    vlm: ComponentSpec | None = Field(
        None,
        description="Answering VLM ({name, args} in serve.vlm.VLMS, e.g. openai at a vLLM endpoint); None skips answers.",
    )
    judge: ComponentSpec | None = Field(
        None, description="LLM judge ({name, args} in serve.vlm.VLMS); None skips judging (F1 is still computed).",
    )
    answer_max_tokens: int = Field(128, ge=1, description="max_tokens of each answer.")
    judge_max_tokens: int | None = Field(
        None, ge=1, description="max_tokens of each judge reply; None: the dataset's (LongMemEval's official 10, "
        "LoCoMo 256 for the mem0-style reason + JSON label).",
    )
    judge_parse: Literal["official", "strict"] = Field(
        "official", description="How judge replies are read: official (LongMemEval: 'yes' in reply.lower()) or "
        "strict (the word yes or no; both or neither is a judge failure).",
    )
    locomo_adversarial: Literal["exclude", "multiple-choice"] = Field(
        "exclude", description="LoCoMo category 5: left out (the paper's tables) or asked as the official "
        "multiple choice ('Not mentioned in the conversation' vs the adversarial answer), scored and reported.",
    )
    read_rate_floor: float = Field(
        0.2, ge=0.0, le=1.0, json_schema_extra={"identity": "execution"},
        description="A shot the pixel reader reads under this share of its words is flagged: the stage ends partial "
        "with one line naming them (0: never). Judges the run, changes no result; not part of the run id.")
    batch_inference: Literal["threads", "ray-data"] = Field(
        "threads", json_schema_extra={"identity": "execution"},
        description="How answers and verdicts are asked: threads (request_concurrency calls from the driver) or "
        "ray-data (ray.data.llm HttpRequestProcessors over the cluster: actors = ray.concurrency, each with its "
        "client's max_concurrency calls in flight; needs openai endpoint specs as memshot.vlm and memshot.judge). "
        "Same answers either way; not part of the run id.")
    processor: Literal["auto", "http", "serve", "engine"] = Field(
        "auto", json_schema_extra={"identity": "execution"},
        description="The ray.data.llm processor of the answering VLM (batch_inference: ray-data; "
        "pipelines/memshot/processors.py): auto -- serve when the model runs as a ray.serve.llm deployment on "
        "this Ray cluster, http for any OpenAI-compatible endpoint (hosted, base_url, a vLLM variant whose "
        "endpoint answers), engine (in-job vLLM engines, engine_weights) for a vLLM model variant nothing "
        "serves; http / serve / engine force one (serve and engine need a model variant with deploy.engine: "
        "vllm). The same prompts and answer records either way; recorded in the stage summary and manifest; "
        "not part of the run id.")
    judge_processor: Literal["auto", "http", "serve", "engine"] = Field(
        "auto", json_schema_extra={"identity": "execution"},
        description="memshot.processor for the judge.")
    engine_weights: str = Field(
        DEFAULT_ROOT, json_schema_extra={"identity": "execution"},
        description="Weights root of the in-job vLLM engines (ray.data.llm vLLMEngineProcessor, "
        "pipelines/memshot/processors.py engine_processor_config) -- the same rule as `vismem serve up --weights`: "
        "where `vismem weights sync --to` put them, the cluster's models dir (default, ${VAR} expanded on the "
        "cluster), s3://BUCKET/PREFIX (downloaded by Ray on each node) or 'hub' (the hub id). Where the same "
        "weights are read from: not part of the run id.")
    request_concurrency: int = Field(8, ge=1, description="Answer/judge requests kept in flight.")
    context_order: Literal["rank", "chronological"] = Field(
        "rank", description="Order of retrieved units in the prompt: best first, or by session/unit position.",
    )

    @field_validator("k")
    @classmethod
    def _positive_k(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        bad = [k for k in v if k < 1]
        if bad:
            raise ValueError(f"every k must be >= 1 (a top-0 or negative cut-off retrieves nothing), got {list(bad)}")
        return v

    @field_validator("engine_weights")
    @classmethod
    def _weights_root(cls, v: str) -> str:
        try:
            return check_root(v)
        except ConfigError as err:
            raise ValueError(str(err)) from None

    @field_validator("variants")
    @classmethod
    def _known_variants(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # At parse time, so `plan` and every stage refuse a mistyped variant before any work
        # (a path to a variant YAML is read when the units are rendered).
        from vismem.memory.dialogue.variants import list_variants

        known = list_variants()
        for name in v:
            if not name.endswith((".yaml", ".yml")) and name not in known:
                raise ValueError(f"unknown memory variant {name!r}{did_you_mean(name, known)}; "
                                 f"available: {', '.join(known)}")
        return v

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, v: str) -> str:
        from vismem.memory.dialogue.datasets import dataset_names

        if v not in dataset_names():
            raise ValueError(f"unknown dataset {v!r}{did_you_mean(v, dataset_names())}; "
                             f"registered: {', '.join(dataset_names())}")
        return v
