"""An embedder behind an OpenAI-compatible ``/v1/embeddings`` endpoint (the local server, the Ray
Serve embedder app, or vLLM's pooling server for text).

Images use the vismem extension (``images``: data URLs, paired with ``input[i]``), which the
local server and :mod:`vismem.serve.apps` understand; ``input_type: "query"`` asks instruction-aware
models for query embeddings. Vectors are re-normalised on arrival.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vismem.serve.embed import l2_normalise
from vismem.serve.http_client import RetryingJSONClient
from vismem.serve.openai_format import to_data_url
from vismem.serve.registry import EMBEDDERS
from vismem.serve.vlm import VLMError


@EMBEDDERS.register("openai-embed")
class HTTPEmbedder(RetryingJSONClient):
    """Args: ``model``, ``base_url``, ``label``, ``dim`` (probed with one call when None),
    ``batch_size`` (inputs per request), plus the retry/timeout knobs of the chat client."""

    def __init__(self, model: str, base_url: str = "http://127.0.0.1:8000/v1", *, label: str | None = None,
                 dim: int | None = None, batch_size: int = 64, api_key_env: str | None = "OPENAI_API_KEY",
                 timeout_s: float = 120.0, max_retries: int = 4, backoff_s: float = 1.0,
                 max_concurrency: int = 8) -> None:
        super().__init__(base_url, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries,
                         backoff_s=backoff_s, max_concurrency=max_concurrency)
        self.model = model
        self.name = f"openai-embed:{label or model}"
        self.batch_size = int(batch_size)
        self._dim = int(dim) if dim else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_texts(["dimension probe"]).shape[1])
        return self._dim

    def _request(self, body: dict[str, Any], n: int) -> np.ndarray:
        data = self.post("/embeddings", {"model": self.model, **body}, who=self.name)
        try:
            rows = sorted(data["data"], key=lambda d: d["index"])
            vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as e:
            raise VLMError(f"{self.name}: malformed embeddings response: {e}", reason="malformed_response") from e
        if vecs.ndim != 2 or vecs.shape[0] != n:
            raise VLMError(f"{self.name}: expected {n} embeddings, got shape {vecs.shape}",
                           reason="malformed_response")
        return vecs

    def _batched(self, n: int, make_body) -> np.ndarray:
        if n == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._request(make_body(i, min(n, i + self.batch_size)), min(n, i + self.batch_size) - i)
                 for i in range(0, n, self.batch_size)]
        vecs = l2_normalise(np.concatenate(parts))
        self._dim = self._dim or int(vecs.shape[1])
        return vecs

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return self._batched(len(texts), lambda a, b: {"input": list(texts[a:b])})

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._batched(len(texts), lambda a, b: {"input": list(texts[a:b]), "input_type": "query"})

    def embed_images(self, images: list[Any], texts: list[str] | None = None) -> np.ndarray:
        from vismem.serve.qwen_inputs import to_pil

        if texts is not None and len(texts) != len(images):
            raise ValueError(f"{len(texts)} texts for {len(images)} images")

        def encoded(img: Any) -> bytes:
            if isinstance(img, (bytes, bytearray)):
                return bytes(img)
            import io

            buf = io.BytesIO()
            to_pil(img).save(buf, format="PNG")
            return buf.getvalue()

        def body(a: int, b: int) -> dict[str, Any]:
            out: dict[str, Any] = {"images": [to_data_url(encoded(i)) for i in images[a:b]]}
            if texts is not None:
                out["input"] = list(texts[a:b])
            return out

        return self._batched(len(images), body)
