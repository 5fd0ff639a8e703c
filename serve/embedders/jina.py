"""Jina-Embeddings-v4 (single-vector retrieval): MemShot's second multimodal retriever (Fig. 4b).

Jina-Embeddings-v4 is Qwen2.5-VL-3B with task LoRA adapters. Its vLLM release for retrieval
(``jinaai/jina-embeddings-v4-vllm-retrieval``) has the retrieval adapter merged, so it loads as
a plain Qwen2.5-VL checkpoint; this class follows that model card:

* texts are plain prompts, ``"Query: <text>"`` for queries and ``"Passage: <text>"`` for
  documents (no chat template);
* an image is the prompt ``<|im_start|>user\\n<|vision_start|><|image_pad|><|vision_end|>Describe
  the image.<|im_end|>\\n`` with the image;
* the embedding is the **mean of the final hidden states** — over every token for a text, over
  the tokens from ``<|vision_start|>`` to ``<|vision_end|>`` (inclusive) for an image — then
  L2-normalised (optionally truncated first, Matryoshka-style, to ``dim``: 128 ... 2048).

Two runners: ``transformers`` (``Qwen2_5_VLModel`` from a local path; CPU tests run this exact
code on the tiny random Qwen2.5-VL, ``tiny:qwen2.5-vl``) and ``vllm`` (``vllm.LLM`` with the
pooling runner's ``token_embed`` task returning every token's hidden state, pooled here as
above). Both resize images within the same ``[min_pixels, max_pixels]``. The real weights
are cluster-only: nothing is downloaded here.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from vismem.serve.embed import l2_normalise
from vismem.serve.registry import EMBEDDERS

QUERY_PREFIX = "Query: "
PASSAGE_PREFIX = "Passage: "
#: The model card's image budget (768 units of 28 px).
MAX_PIXELS = 602_112
IMAGE_PROMPT = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe the image.<|im_end|>\n"


def pool_mean(hidden: np.ndarray, ids: np.ndarray, mask: np.ndarray, start_id: int, end_id: int) -> np.ndarray:
    """Mean over a row's attended tokens, or over its vision span when it has one (model card)."""
    out = np.zeros((hidden.shape[0], hidden.shape[-1]), dtype=np.float32)
    for i in range(hidden.shape[0]):
        keep = mask[i].astype(bool)
        starts, ends = np.flatnonzero(ids[i] == start_id), np.flatnonzero(ids[i] == end_id)
        if starts.size and ends.size:
            keep = np.zeros_like(keep)
            keep[starts[0]:ends[0] + 1] = True
        out[i] = hidden[i][keep].astype(np.float32).mean(axis=0)
    return out


@EMBEDDERS.register("jina-embeddings-v4", accelerator=True,
                    stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class JinaV4Embedder:
    """Args:
        path: local checkpoint (a snapshot of ``jinaai/jina-embeddings-v4-vllm-retrieval``), or
            ``tiny:qwen2.5-vl`` for the tiny random stand-in (tests).
        runner: ``transformers`` or ``vllm``.
        label: name suffix, ``jina-embeddings-v4:<label>``.
        dim: Matryoshka truncation (first ``dim`` of 2048 dims); None = full.
        batch_size: inputs per forward pass.
        min_pixels / max_pixels: image resize bounds, the same on both runners (the model card's
            budget is 602,112 px); None keeps the checkpoint's (both runners read its processor config).
        device / dtype: ``auto`` → CUDA + bfloat16 when available, else CPU + float32.
        vllm_kwargs: extra ``vllm.LLM`` arguments (the pooler and ``mm_processor_kwargs`` are set here).
    """

    def __init__(self, path: str, *, runner: str = "transformers", label: str | None = None,
                 dim: int | None = None, batch_size: int = 8, min_pixels: int | None = None,
                 max_pixels: int | None = MAX_PIXELS,
                 device: str = "auto", dtype: str = "auto", vllm_kwargs: dict[str, Any] | None = None) -> None:
        from vismem.serve.testing import default_label, resolve_model_path

        if runner not in ("transformers", "vllm"):
            raise ValueError(f"runner must be 'transformers' or 'vllm', got {runner!r}")
        self.name = f"jina-embeddings-v4:{label or default_label(str(path))}"
        self.path = resolve_model_path(str(path))
        self.runner, self.batch_size = runner, int(batch_size)
        self.pixel_bounds = {k: int(v) for k, v in (("min_pixels", min_pixels), ("max_pixels", max_pixels))
                             if v is not None}
        self.inputs = _PromptInputs(self.path, **self.pixel_bounds)
        tok = self.inputs.tokenizer
        self.vision_start = tok.convert_tokens_to_ids("<|vision_start|>")
        self.vision_end = tok.convert_tokens_to_ids("<|vision_end|>")
        self._lock = threading.Lock()
        if runner == "transformers":
            from vismem.serve.qwen_inputs import model_class_for, torch_device, torch_dtype

            self.device = torch_device(device)
            cls = model_class_for(self.path, embedding=True)  # Qwen2_5_VLModel: hidden states only
            self.model = cls.from_pretrained(self.path, dtype=torch_dtype(dtype), local_files_only=True)
            self.model.to(self.device).eval()
            full = int(getattr(self.model.config, "text_config", self.model.config).hidden_size)
        else:
            full = self._load_vllm(dtype, dict(vllm_kwargs or {}))
        self.dim = int(dim) if dim else full
        if self.dim > full:
            raise ValueError(f"dim {self.dim} exceeds the model's hidden size {full}")

    def _load_vllm(self, dtype: str, kwargs: dict[str, Any]) -> int:
        """The offline engine (cluster only); returns the hidden size. vLLM 0.29: the pooling
        runner's ``token_embed`` task with ``ALL`` pooling returns every token's hidden state,
        un-normalised (``use_activation=False``), for the vision-span mean here."""
        import json
        from pathlib import Path

        from vismem.serve.vllm_cpu import prepare_in_process

        prepare_in_process()
        from vllm import LLM
        from vllm.config import PoolerConfig

        cfg = json.loads((Path(self.path) / "config.json").read_text())
        kwargs["pooler_config"] = PoolerConfig(task="token_embed", pooling_type="ALL", use_activation=False)
        kwargs["mm_processor_kwargs"] = self.pixel_bounds  # the transformers path's bounds
        self.llm = LLM(model=self.path, runner="pooling", dtype=dtype, **kwargs)
        return int((cfg.get("text_config") or cfg)["hidden_size"])

    def _forward(self, prompts: list[str], images: list[list[Any]]) -> np.ndarray:
        if self.runner == "vllm":
            return self._forward_vllm(prompts, images)
        import torch

        batch = self.inputs.batch(prompts, images, padding_side="right")  # type: ignore[arg-type]
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with self._lock, torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state.float().cpu().numpy()
        return pool_mean(hidden, batch["input_ids"].cpu().numpy(), batch["attention_mask"].cpu().numpy(),
                         self.vision_start, self.vision_end)

    def _forward_vllm(self, prompts: list[str], images: list[list[Any]]) -> np.ndarray:
        from vismem.serve.qwen_inputs import to_pil

        reqs = [{"prompt": p, **({"multi_modal_data": {"image": to_pil(i[0])}} if i else {})}
                for p, i in zip(prompts, images)]
        with self._lock:  # Serve's request threads must not enter the offline engine together
            outs = self.llm.encode(reqs, pooling_task="token_embed", use_tqdm=False)
        vecs = []
        for o in outs:
            ids = np.asarray(o.prompt_token_ids)
            hidden = _as_float32(o.outputs.data)
            vecs.append(pool_mean(hidden[None], ids[None], np.ones((1, len(ids))), self.vision_start,
                                  self.vision_end)[0])
        return np.stack(vecs)

    def _embed(self, prompts: list[str], images: list[list[Any]]) -> np.ndarray:
        if not prompts:
            return np.zeros((0, self.dim), dtype=np.float32)
        chunks = [self._forward(prompts[i:i + self.batch_size], images[i:i + self.batch_size])
                  for i in range(0, len(prompts), self.batch_size)]
        return l2_normalise(np.concatenate(chunks)[:, :self.dim])

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Documents (memory units as text) with the ``Passage:`` prefix."""
        return self._embed([PASSAGE_PREFIX + t for t in texts], [[] for _ in texts])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Questions with the ``Query:`` prefix."""
        return self._embed([QUERY_PREFIX + t for t in texts], [[] for _ in texts])

    def embed_images(self, images: list[Any], texts: list[str] | None = None) -> np.ndarray:
        """Shots with the model card's image prompt (a paired text, if any, is not used)."""
        return self._embed([IMAGE_PROMPT] * len(images), [[img] for img in images])


def _as_float32(data: Any) -> np.ndarray:
    """A pooler output (a torch tensor, possibly bfloat16, or a list) as float32 numpy."""
    if hasattr(data, "float") and hasattr(data, "cpu"):
        data = data.float().cpu().numpy()
    return np.asarray(data, dtype=np.float32)


class _PromptInputs:
    """``QwenVLInputs`` over ready prompt strings (Jina's prompts are not chat conversations)."""

    def __new__(cls, path: str, *, min_pixels: int | None = None, max_pixels: int | None = None):
        from vismem.serve.qwen_inputs import QwenVLInputs

        class Inputs(QwenVLInputs):
            def render(self, conversation: Any, *, add_generation_prompt: bool = True) -> str:
                if isinstance(conversation, str):
                    return conversation
                return super().render(conversation, add_generation_prompt=add_generation_prompt)

        return Inputs(path, min_pixels=min_pixels, max_pixels=max_pixels)
