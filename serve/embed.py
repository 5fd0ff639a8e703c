"""The Embedder protocol: texts and/or images → L2-normalised float32 vectors (imports nothing
else of serve).

Backends register in :data:`vismem.serve.registry.EMBEDDERS` (``minilm``, ``qwen3-vl-embedding``,
``siglip2``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

ImageInput = Union[bytes, "Image.Image"]


@runtime_checkable
class Embedder(Protocol):
    """Maps inputs into one vector space of size ``dim``; rows are unit-length float32."""

    name: str
    dim: int

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """``(n, dim)`` float32, L2-normalised rows."""
        ...

    def embed_images(self, images: list[ImageInput], texts: list[str] | None = None) -> np.ndarray:
        """``(n, dim)`` float32; ``texts[i]`` (optional) is paired with ``images[i]``.

        Text-only embedders raise ``NotImplementedError``.
        """
        ...


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32 (zero rows stay zero rather than NaN)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed retrieval *queries*: instruction-aware embedders (Qwen3-VL-Embedding) use their
    query instruction; symmetric ones (MiniLM, SigLIP-2) fall back to ``embed_texts``."""
    fn = getattr(embedder, "embed_queries", None)
    return fn(texts) if fn is not None else embedder.embed_texts(texts)
