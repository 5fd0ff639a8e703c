"""Qwen3-VL-Embedding (2B/8B): one space for text, images and image+text, instruction-aware.

Follows the model card: every input is a chat with a system turn carrying the instruction
(queries: ``Retrieve images or text relevant to the user's query.``; documents: ``Represent the
user's input.``) and a user turn with the image(s) first, then the text (``NULL`` when empty),
rendered with the generation prompt; the embedding is the final hidden state at the **last
attended token**, L2-normalised (optionally truncated first, Matryoshka-style, to ``dim``).
Images are resized within ``[min_pixels, max_pixels]`` on a 32-pixel grid (patch 16 × merge 2).

Two runners behind the same class:
- ``transformers``: ``Qwen3VLModel`` from a local path (CPU tests use a tiny random checkpoint
  from :func:`vismem.serve.testing.build_tiny_qwen3vl`, which runs this exact code).
- ``vllm``: ``vllm.LLM(model=path, runner="pooling").embed(...)`` on the GPU cluster (vLLM 0.29:
  last-token pooler, the same ``min_pixels`` / ``max_pixels`` as ``mm_processor_kwargs``);
  imported lazily, never needed locally.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from vismem.serve.embed import l2_normalise
from vismem.serve.registry import EMBEDDERS

QUERY_INSTRUCTION = "Retrieve images or text relevant to the user's query."
DOCUMENT_INSTRUCTION = "Represent the user's input."
MIN_PIXELS = 4 * 32 * 32
MAX_PIXELS = 1800 * 32 * 32


def last_token_pool(hidden: "Any", attention_mask: "Any") -> "Any":
    """Hidden state at each row's last attended position (works for left and right padding)."""
    import torch

    last = attention_mask.shape[1] - 1 - attention_mask.flip(dims=[1]).to(torch.long).argmax(dim=1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def embedding_conversation(text: str | None, n_images: int, instruction: str) -> list[dict[str, Any]]:
    """The model card's input format: system = instruction, user = images then text."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    if text:
        content.append({"type": "text", "text": text})
    if not content:
        content.append({"type": "text", "text": "NULL"})
    return [{"role": "system", "content": [{"type": "text", "text": instruction}]},
            {"role": "user", "content": content}]


@EMBEDDERS.register("qwen3-vl-embedding", accelerator=True,
                    stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class Qwen3VLEmbedder:
    """Args:
        path: local checkpoint directory (e.g. a snapshot of ``Qwen/Qwen3-VL-Embedding-8B``), or
            ``tiny:qwen3-vl-embedding`` for a cached tiny random stand-in.
        runner: ``transformers`` or ``vllm``.
        label: name suffix, ``qwen3-vl-embedding:<label>`` (defaults to the directory name).
        dim: Matryoshka truncation (keep the first ``dim`` dims before normalising); None = full.
        batch_size: inputs per forward pass.
        min_pixels / max_pixels: image resize bounds.
        query_instruction / document_instruction: the two instructions (see module docstring).
        device / dtype: ``auto`` → CUDA + bfloat16 when available, else CPU + float32.
        vllm_kwargs: extra ``vllm.LLM`` arguments (``max_model_len``, ``gpu_memory_utilization``...);
            the pooler and ``mm_processor_kwargs`` (the pixel bounds above) are set here.
    """

    def __init__(self, path: str, *, runner: str = "transformers", label: str | None = None,
                 dim: int | None = None, batch_size: int = 8, min_pixels: int = MIN_PIXELS,
                 max_pixels: int = MAX_PIXELS, query_instruction: str = QUERY_INSTRUCTION,
                 document_instruction: str = DOCUMENT_INSTRUCTION, device: str = "auto",
                 dtype: str = "auto", vllm_kwargs: dict[str, Any] | None = None) -> None:
        from vismem.serve.qwen_inputs import QwenVLInputs

        if runner not in ("transformers", "vllm"):
            raise ValueError(f"runner must be 'transformers' or 'vllm', got {runner!r}")
        from vismem.serve.testing import default_label, resolve_model_path

        self.name = f"qwen3-vl-embedding:{label or default_label(str(path))}"
        self.path = path = resolve_model_path(str(path))
        self.runner = runner
        self.batch_size = int(batch_size)
        self.query_instruction = query_instruction
        self.document_instruction = document_instruction
        self.pixel_bounds = {"min_pixels": int(min_pixels), "max_pixels": int(max_pixels)}
        self.inputs = QwenVLInputs(path, **self.pixel_bounds)
        # One model call at a time: Serve drives a replica from several threads, and neither the
        # transformers modules nor the offline vllm.LLM may be entered concurrently.
        self._lock = threading.Lock()
        if runner == "transformers":
            self._load_transformers(device, dtype)
            full = int(self.model.config.text_config.hidden_size)
        else:
            self._load_vllm(dtype, dict(vllm_kwargs or {}))
            full = int(self._hidden_size)
        self.dim = int(dim) if dim else full
        if self.dim > full:
            raise ValueError(f"dim {self.dim} exceeds the model's hidden size {full}")

    # -- runners ------------------------------------------------------------------------------
    def _load_transformers(self, device: str, dtype: str) -> None:
        from vismem.serve.qwen_inputs import model_class_for, torch_device, torch_dtype

        self.device = torch_device(device)
        cls = model_class_for(self.path, embedding=True)  # Qwen3VLModel: no LM head needed
        self.model = cls.from_pretrained(self.path, dtype=torch_dtype(dtype), local_files_only=True)
        self.model.to(self.device).eval()

    def _load_vllm(self, dtype: str, kwargs: dict[str, Any]) -> None:
        import json

        from vismem.serve.vllm_cpu import prepare_in_process

        prepare_in_process()
        from vllm import LLM  # cluster only: vllm is not installed locally
        from vllm.config import PoolerConfig

        cfg = json.loads((Path(self.path) / "config.json").read_text())
        self._hidden_size = (cfg.get("text_config") or cfg)["hidden_size"]
        kwargs.setdefault("limit_mm_per_prompt", {"image": 4})
        # The transformers path's pooling (last token) and image bounds, so both paths give the
        # same vectors; the pooler normalises, and _embed re-normalises after Matryoshka truncation.
        kwargs["pooler_config"] = PoolerConfig(task="embed", pooling_type="LAST")
        kwargs["mm_processor_kwargs"] = self.pixel_bounds
        self.llm = LLM(model=self.path, runner="pooling", dtype=dtype, **kwargs)

    def _forward_transformers(self, convs: list[list[dict]], images: list[list[Any]]) -> np.ndarray:
        import torch

        batch = self.inputs.batch(convs, images, padding_side="right")
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with self._lock, torch.inference_mode():
            out = self.model(**batch)
        pooled = last_token_pool(out.last_hidden_state, batch["attention_mask"])
        return pooled.float().cpu().numpy()

    def _forward_vllm(self, convs: list[list[dict]], images: list[list[Any]]) -> np.ndarray:
        from vismem.serve.qwen_inputs import to_pil

        prompts = []
        for conv, imgs in zip(convs, images):
            prompt: dict[str, Any] = {"prompt": self.inputs.render(conv, add_generation_prompt=True)}
            if imgs:  # vLLM expands each single <|image_pad|> itself
                prompt["multi_modal_data"] = {"image": [to_pil(i) for i in imgs]}
            prompts.append(prompt)
        with self._lock:
            outs = self.llm.embed(prompts, use_tqdm=False)
        return np.asarray([o.outputs.embedding for o in outs], dtype=np.float32)

    # -- the protocol ---------------------------------------------------------------------------
    def _embed(self, items: list[tuple[str | None, list[Any]]], instruction: str) -> np.ndarray:
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        forward = self._forward_transformers if self.runner == "transformers" else self._forward_vllm
        chunks = []
        for i in range(0, len(items), self.batch_size):
            part = items[i: i + self.batch_size]
            convs = [embedding_conversation(t, len(imgs), instruction) for t, imgs in part]
            chunks.append(forward(convs, [imgs for _, imgs in part]))
        vecs = np.concatenate(chunks, axis=0)[:, : self.dim]
        return l2_normalise(vecs)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Documents (memory units, captions) with the document instruction."""
        return self._embed([(t, []) for t in texts], self.document_instruction)

    def embed_queries(self, texts: list[str], instruction: str | None = None) -> np.ndarray:
        """Queries with the query instruction (or a task-specific one)."""
        return self._embed([(t, []) for t in texts], instruction or self.query_instruction)

    def embed_images(self, images: list[Any], texts: list[str] | None = None) -> np.ndarray:
        """Image documents, each optionally with its paired text (image first, then text)."""
        if texts is not None and len(texts) != len(images):
            raise ValueError(f"{len(texts)} texts for {len(images)} images")
        pairs = [(texts[i] if texts else None, [img]) for i, img in enumerate(images)]
        return self._embed(pairs, self.document_instruction)
