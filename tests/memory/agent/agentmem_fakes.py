"""Fakes behind the real protocols for the memory.agent tests: a FeatureSource with hand-chosen
vectors, a counting embedder and captioner, and trajectory step rows (imported by the tests of
this folder, which pytest puts on sys.path)."""

from __future__ import annotations

import hashlib

import numpy as np

#: Stand-in components for building the variants without model weights or endpoints.
LOCAL = {"captioner": "catalogue", "visual_encoder": "tiny-siglip2", "text_encoder": "minilm"}


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


class FakeFeatures:
    """A FeatureSource over dicts: captions by (task, url_hash), image vectors by image key,
    document vectors by text, query vectors by (spec kind family, text) — ``"visual"`` for
    image-text encoders, ``"text"`` for the sentence encoder."""

    def __init__(self, *, captions=None, images=None, texts=None, queries=None):
        self.captions = dict(captions or {})
        self.images = dict(images or {})
        self.texts = dict(texts or {})
        self.queries = dict(queries or {})
        self.asked: list[tuple] = []

    @staticmethod
    def _family(spec) -> str:
        return "text" if spec.spec["name"] == "minilm" else "visual"

    def caption(self, image_key, url_hash, spec):
        task = spec.spec["args"]["task"]
        self.asked.append(("caption", task, image_key, url_hash))
        return self.captions.get((task, url_hash))

    def image_embedding(self, image_key, spec):
        return None if not image_key else self.images.get(image_key)

    def text_embedding(self, text, spec):
        return self.texts[text]

    def query_embedding(self, text, spec):
        return self.queries[(self._family(spec), text)]

    def image_bytes(self, image_key):
        return f"png:{image_key}".encode()


class CountingEmbedder:
    """Deterministic 8-d vectors from content hashes; counts what it embeds."""

    dim = 8

    def __init__(self, name: str) -> None:
        self.name = name
        self.images: list[bytes] = []
        self.texts: list[str] = []

    @staticmethod
    def _vec(data: bytes) -> np.ndarray:
        raw = np.frombuffer(hashlib.sha256(data).digest()[:8], dtype=np.uint8).astype(np.float32) - 127.5
        return raw / np.linalg.norm(raw)

    def embed_texts(self, texts):
        self.texts.extend(texts)
        return np.stack([self._vec(t.encode()) for t in texts]) if texts else np.zeros((0, 8), np.float32)

    def embed_queries(self, texts):
        return self.embed_texts(texts)

    def embed_images(self, images, texts=None):
        self.images.extend(images)
        return np.stack([self._vec(b"img" + b) for b in images])


class CountingCaptioner:
    def __init__(self, task: str) -> None:
        self.task = task
        self.name = f"counting/{task}"
        self.seen: list[str | None] = []

    def caption(self, image, *, url_hash=None):
        self.seen.append(url_hash)
        return f"{self.task} caption of {url_hash}"


def make_step(j: int, step: int, url_hash: str | None, *, image: bool = True, backend: str = "b", seed: int = 0):
    from vismem.agents.records import StepRecord

    url = f"/product/{url_hash}" if url_hash else "/category/chair"
    return StepRecord(backend=backend, seed=seed, j=j, category="chair", n_steps=25, step=step, url=url, title=url,
                      description=url, url_hash=url_hash, style=None,
                      image_key=(f"blobs/sha256/{hashlib.sha256(url_hash.encode()).hexdigest()}.png"
                                 if (url_hash and image) else None),
                      n_images=1, status="ok", action_type="navigate", action_arg=None, action_text=None,
                      thought=None, reply=None, error=None, exec_error=None, forced_nav=False, latency_s=0.0,
                      prompt_tokens=None, completion_tokens=None)


def product_hashes():
    """Real catalogue hashes by category (from the frozen hash formula)."""
    from vismem.env.storefront.catalog import STYLES
    from vismem.env.storefront.catalog import url_hash

    return {c: [url_hash(c, s, i) for s in STYLES[:2] for i in range(3)] for c in ("chair", "lamp", "wall_art")}
