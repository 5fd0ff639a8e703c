"""MemShot stage config (owned by the MemShot pipeline; extend here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pipelines.configs.base import Frozen


class ComponentSpec(Frozen):
    """A registry spec: rebuilds a component (VLM, embedder) anywhere; recorded in the manifest."""

    name: str = Field(..., min_length=1, description="Registered name (e.g. minilm, openai, scripted).")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the factory.")

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args)}


class MemShotConfig(Frozen):
    """Dialogue memory shots, retrieval, answers and judged scores."""

    enabled: bool = Field(True, description="Run this stage when the run's stage list includes it.")

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
    embed_batch_size: int = Field(64, ge=1, description="Items per embedding batch (one model call).")
    embed_actors: int = Field(1, ge=1, description="Ray Data embedding actors (one embedder copy each).")
    embed_on_ray: bool | None = Field(
        None,
        description="Embed as a Ray Data actor-pool job (True) or in the driver (False); None: Ray above 2,000 items.",
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
    judge_max_tokens: int = Field(256, ge=1, description="max_tokens of each judge reply.")
    request_concurrency: int = Field(8, ge=1, description="Answer/judge requests kept in flight.")
    context_order: Literal["rank", "chronological"] = Field(
        "rank", description="Order of retrieved units in the prompt: best first, or by session/unit position.",
    )
