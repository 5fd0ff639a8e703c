"""Dual-encoder image/text embedders through transformers: SigLIP-2 and CLIP.

DMV-Bench's visual channel (``google/siglip2-base-patch16-384``; CLIP ViT-B/32 in the encoder
ablation). Images and texts land in one aligned space; a text paired with an image in
:meth:`embed_images` is ignored by default (``pair="image"``), or averaged in (``pair="mean"``).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from vismem.serve.embed import l2_normalise
from vismem.serve.registry import EMBEDDERS


def _features(out: Any):
    """transformers 5 returns model outputs from ``get_*_features``; older versions a tensor."""
    return out if hasattr(out, "shape") else out.pooler_output


class HFDualEncoder:
    """Shared loading / batching for SigLIP-2 and CLIP. Subclasses set the text padding policy."""

    kind = "dual"
    text_padding: str | bool = True
    text_max_length = 77

    def __init__(self, path: str, *, label: str | None = None, batch_size: int = 32, device: str = "auto",
                 dtype: str = "float32", pair: str = "image") -> None:
        from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

        from vismem.serve.qwen_inputs import torch_device, torch_dtype

        if pair not in ("image", "mean"):
            raise ValueError(f"pair must be 'image' or 'mean', got {pair!r}")
        from vismem.serve.testing import default_label, resolve_model_path

        self.name = f"{self.kind}:{label or default_label(str(path))}"
        self.path = resolve_model_path(str(path))
        self.batch_size = int(batch_size)
        self.pair = pair
        self.device = torch_device(device)
        self.model = AutoModel.from_pretrained(self.path, dtype=torch_dtype(dtype), local_files_only=True)
        self.model.to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        self.image_processor = AutoImageProcessor.from_pretrained(self.path, local_files_only=True)
        self.max_length = min(self.text_max_length, int(self.model.config.text_config.max_position_embeddings))
        self.dim = int(self._probe_dim())
        self._lock = threading.Lock()

    def _probe_dim(self) -> int:
        cfg = self.model.config
        return int(getattr(cfg, "projection_dim", None) or cfg.vision_config.hidden_size)

    def _batches(self, items: list[Any]):
        for i in range(0, len(items), self.batch_size):
            yield items[i: i + self.batch_size]

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        import torch

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for part in self._batches(list(texts)):
            enc = self.tokenizer(part, padding=self.text_padding, truncation=True,
                                 max_length=self.max_length, return_tensors="pt")
            enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
            with self._lock, torch.inference_mode():
                out.append(_features(self.model.get_text_features(**enc)).float().cpu().numpy())
        return l2_normalise(np.concatenate(out))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_texts(texts)

    def embed_images(self, images: list[Any], texts: list[str] | None = None) -> np.ndarray:
        import torch

        from vismem.serve.qwen_inputs import to_pil

        if texts is not None and len(texts) != len(images):
            raise ValueError(f"{len(texts)} texts for {len(images)} images")
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for part in self._batches([to_pil(i) for i in images]):
            enc = dict(self.image_processor(images=part, return_tensors="pt"))
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with self._lock, torch.inference_mode():
                out.append(_features(self.model.get_image_features(**enc)).float().cpu().numpy())
        vecs = l2_normalise(np.concatenate(out))
        if texts is not None and self.pair == "mean":
            vecs = l2_normalise(vecs + self.embed_texts(texts))
        return vecs


@EMBEDDERS.register("siglip2", accelerator=True,
                    stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class Siglip2Embedder(HFDualEncoder):
    """SigLIP-2 (``Siglip2Model``); texts are padded to max length, as the model was trained."""

    kind = "siglip2"
    text_padding = "max_length"
    text_max_length = 64

    def _probe_dim(self) -> int:
        return int(self.model.config.vision_config.hidden_size)


@EMBEDDERS.register("clip", accelerator=True,
                    stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class ClipEmbedder(HFDualEncoder):
    """CLIP (``CLIPModel``) with its projection head."""

    kind = "clip"
