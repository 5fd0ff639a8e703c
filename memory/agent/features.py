"""Features the architectures read: captions, image embeddings, text embeddings — computed once.

Every feature is a function of *(content, model spec)*: a caption of (image hash, captioner spec
with its task), an image embedding of (image hash, encoder spec), a text embedding of (text hash,
encoder spec). :class:`FeatureSpec` names one (kind, resolved spec) with a content-address
``key`` that leaves out transport-only arguments (endpoints, keys, timeouts, device, batch size,
display labels, the directory a model sits in), so the same model reached another way shares its
features, and a different model or prompt never does.

Two sources implement :class:`FeatureSource`:

* :class:`InProcessFeatures` builds encoders/captioners from their specs on demand and memoises
  every result (tests, the benchmark, small local runs); :meth:`InProcessFeatures.precompute`
  batches the union of what a set of architectures needs over a set of observations;
* :class:`vismem.memory.agent.tables.TableFeatures` answers from precomputed tables (what a pipeline
  job loads from the store), optionally falling back to another source for what is missing
  (query embeddings).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Protocol, runtime_checkable

import numpy as np

from vismem.core.identity import content_digest, content_key

if TYPE_CHECKING:
    from vismem.core.registry import ComponentSpec
    from vismem.memory.agent.types import Observation

FeatureKind = Literal["caption", "image_embedding", "text_embedding"]
FEATURE_KINDS: tuple[str, ...] = ("caption", "image_embedding", "text_embedding")

#: Bump when how a feature is computed changes (invalidates every stored feature).
FEATURE_VERSION = 1

#: How the official captioner reports a failed call (kept out of the tables, retried next time).
CAPTION_ERROR_PREFIX = "<caption error:"
_BLOB_RE = re.compile(r"(?:^|/)sha256/([0-9a-f]{16,64})(?:\.[A-Za-z0-9]+)?$")


def spec_key(kind: str, resolved: Mapping[str, Any]) -> str:
    """16-hex content address of a (kind, resolved spec)."""
    return content_digest({"v": FEATURE_VERSION, "kind": kind, "spec": content_key(resolved)})


@dataclass(frozen=True, eq=False)
class FeatureSpec:
    """One feature family: ``kind`` computed by the resolved ``spec``; ``key`` addresses it.

    ``label`` is how results name the component (``tiny-siglip2``, ``catalogue/caption``) and
    ``stand_in`` whether it stands in for a model that cannot run here.
    """

    kind: str
    spec: dict[str, Any] = field(repr=False)
    key: str
    label: str
    stand_in: bool

    def __hash__(self) -> int:
        return hash((self.kind, self.key))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureSpec) and (self.kind, self.key) == (other.kind, other.key)


def _label(spec: ComponentSpec | Mapping[str, Any] | str) -> str:
    from vismem.core.registry import ComponentSpec

    if isinstance(spec, str):
        return spec
    try:
        return ComponentSpec.model_validate(spec).key
    except Exception:  # noqa: BLE001 - a label is cosmetic
        return str(spec)


def embedder_feature(kind: str, spec: ComponentSpec | Mapping[str, Any] | str) -> FeatureSpec:
    """A FeatureSpec for an embedder (``image_embedding`` or ``text_embedding``)."""
    from vismem.core.registry import ComponentSpec
    from vismem.serve.registry import EMBEDDERS

    raw = spec.raw() if isinstance(spec, ComponentSpec) else spec
    resolved = EMBEDDERS.resolve(raw, field=kind)
    return FeatureSpec(kind, resolved, spec_key(kind, resolved), _label(raw), EMBEDDERS.is_stand_in(resolved))


def caption_feature(backend: Any, task: str) -> FeatureSpec:
    """A FeatureSpec for captioner ``backend`` doing official ``task``."""
    from vismem.core.registry import ComponentSpec
    from vismem.memory.agent.captioner import CAPTIONERS, captioner_spec

    raw = backend.raw() if isinstance(backend, ComponentSpec) else backend
    resolved = captioner_spec(raw, task)
    label = _label(raw)
    if resolved["name"] == "vlm":
        label = f"vlm({_label(raw.get('args', {}).get('vlm') if isinstance(raw, Mapping) else raw)})"
    return FeatureSpec("caption", resolved, spec_key("caption", resolved), f"{label}/{task}",
                       CAPTIONERS.is_stand_in(resolved))


def content_id(image_key: str) -> str:
    """The content hash of a blob key (``blobs/sha256/<hex>.png`` → ``<hex>``); other keys hash."""
    m = _BLOB_RE.search(image_key)
    return m.group(1) if m else hashlib.sha256(image_key.encode()).hexdigest()


def caption_id(image_key: str | None, url_hash: str | None) -> str:
    """What a caption is addressed by: the image's content, or the product when there is no image
    (the adapters' captioner calls are then made without one)."""
    return content_id(image_key) if image_key else f"noimage:{url_hash or ''}"


def text_id(text: str) -> str:
    """The content hash of a text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MissingFeature(KeyError):
    """A table-backed source was asked for a feature it does not hold (and has no fallback)."""


@runtime_checkable
class FeatureSource(Protocol):
    """What the architectures read. Vectors are L2-normalised float32 rows."""

    def caption(self, image_key: str | None, url_hash: str | None, spec: FeatureSpec) -> str | None:
        """The caption of one visit's image by captioner ``spec`` (None: no caption)."""
        ...

    def image_embedding(self, image_key: str | None, spec: FeatureSpec) -> np.ndarray | None:
        """The image's embedding by encoder ``spec`` (None without an image)."""
        ...

    def text_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        """A document text's embedding by encoder ``spec``."""
        ...

    def query_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        """A retrieval query's embedding (the encoder's query form)."""
        ...

    def image_bytes(self, image_key: str) -> bytes:
        """The image itself (for injection into the agent's prompt)."""
        ...


@dataclass
class FeatureTables:
    """Precomputed features, keyed ``(FeatureSpec.key, content id)``; ``specs`` maps each key to
    its ``{kind, spec, label, stand_in}`` (for manifests and frames)."""

    captions: dict[tuple[str, str], str | None] = field(default_factory=dict)
    image_embeddings: dict[tuple[str, str], np.ndarray | None] = field(default_factory=dict)
    text_embeddings: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add_spec(self, fs: FeatureSpec) -> None:
        self.specs[fs.key] = {"kind": fs.kind, "spec": fs.spec, "label": fs.label, "stand_in": fs.stand_in}


def _first_vector(x: np.ndarray) -> np.ndarray:
    return np.asarray(x[0], dtype=np.float32)


class InProcessFeatures:
    """Builds each encoder/captioner once from its spec and memoises every feature.

    Args:
        read_blob: ``image_key -> bytes`` (the store's blob reader, a dict's ``__getitem__``).
        build_embedder / build_captioner: factories from a resolved spec (defaults: the serve
            registry and :data:`vismem.memory.agent.captioner.CAPTIONERS`); tests pass fakes.
        caption_workers: concurrent captioner calls in a batch (a remote VLM answers many at
            once; the local stand-in needs 1).

    A caption the captioner reports as failed (the official ``<caption error: ...>`` text) is
    returned but not kept, as the official cache never stores one: the next ask retries.
    """

    def __init__(self, read_blob: Callable[[str], bytes], *, build_embedder: Callable[[dict], Any] | None = None,
                 build_captioner: Callable[[dict], Any] | None = None, caption_workers: int = 1) -> None:
        from vismem.memory.agent.captioner import build_captioner as _bc
        from vismem.serve.build import build_embedder as _be

        self.read_blob = read_blob
        self._build_embedder = build_embedder or _be
        self._build_captioner = build_captioner or _bc
        self.caption_workers = max(1, int(caption_workers))
        self._models: dict[str, Any] = {}
        self._lock = threading.RLock()
        self.tables = FeatureTables()
        self._texts: dict[tuple[str, str], np.ndarray] = {}
        self._queries: dict[tuple[str, str], np.ndarray] = {}
        #: model calls per (kind, spec label): the "computed once" contract is testable.
        self.calls: Counter = Counter()
        self.seconds: Counter = Counter()

    def model(self, fs: FeatureSpec) -> Any:
        """The component for ``fs`` (built on first use)."""
        with self._lock:
            if fs.key not in self._models:
                build = self._build_captioner if fs.kind == "caption" else self._build_embedder
                self._models[fs.key] = build(fs.spec)
                self.tables.add_spec(fs)
            return self._models[fs.key]

    # -- the FeatureSource protocol ----------------------------------------------------------
    def caption(self, image_key: str | None, url_hash: str | None, spec: FeatureSpec) -> str | None:
        k = (spec.key, caption_id(image_key, url_hash))
        if k in self.tables.captions:
            return self.tables.captions[k]
        return self._caption_batch(spec, [(image_key, url_hash)])[0]

    def image_embedding(self, image_key: str | None, spec: FeatureSpec) -> np.ndarray | None:
        if not image_key:
            return None
        k = (spec.key, content_id(image_key))
        if k not in self.tables.image_embeddings:
            self._image_batch(spec, [image_key])
        return self.tables.image_embeddings[k]

    def text_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        k = (spec.key, text)
        if k not in self._texts:
            self._text_batch(spec, [text])
        return self._texts[k]

    def query_embedding(self, text: str, spec: FeatureSpec) -> np.ndarray:
        k = (spec.key, text)
        vec = self._queries.get(k)
        if vec is None:
            from vismem.serve.embed import embed_queries

            t0 = time.perf_counter()
            vec = _first_vector(embed_queries(self.model(spec), [text]))
            self._count(spec, "query", 1, t0)
            self._queries[k] = vec
        return vec

    def prefetch_queries(self, texts: Iterable[str], spec: FeatureSpec) -> int:
        """Embed, in one batch, the queries of ``texts`` not memoised yet (a probe unit knows its
        first-step queries up front: one model call instead of one per probe). Returns how many."""
        todo = [t for t in dict.fromkeys(texts) if (spec.key, t) not in self._queries]
        if todo:
            from vismem.serve.embed import embed_queries

            t0 = time.perf_counter()
            vecs = np.asarray(embed_queries(self.model(spec), todo), dtype=np.float32)
            self._count(spec, "query", len(todo), t0)
            self._queries.update({(spec.key, t): v for t, v in zip(todo, vecs)})
        return len(todo)

    def image_bytes(self, image_key: str) -> bytes:
        return self.read_blob(image_key)

    # -- batched computation -----------------------------------------------------------------
    def _count(self, spec: FeatureSpec, what: str, n: int, t0: float) -> None:
        self.calls[(spec.kind if what == "doc" else what, spec.label)] += n
        self.seconds[spec.kind if what == "doc" else what] += time.perf_counter() - t0

    def _caption_batch(self, spec: FeatureSpec, items: list[tuple[str | None, str | None]]) -> list[str]:
        cap = self.model(spec)
        t0 = time.perf_counter()

        def one(item: tuple[str | None, str | None]) -> str:
            image_key, url_hash = item
            return cap.caption(self.read_blob(image_key) if image_key else None, url_hash=url_hash)

        if self.caption_workers > 1 and len(items) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.caption_workers, len(items))) as pool:
                texts = list(pool.map(one, items))
        else:
            texts = [one(i) for i in items]
        for (image_key, url_hash), text in zip(items, texts):
            if not (text or "").startswith(CAPTION_ERROR_PREFIX):
                self.tables.captions[(spec.key, caption_id(image_key, url_hash))] = text
        self._count(spec, "doc", len(items), t0)
        return texts

    def _image_batch(self, spec: FeatureSpec, image_keys: list[str]) -> None:
        enc = self.model(spec)
        t0 = time.perf_counter()
        vecs = np.asarray(enc.embed_images([self.read_blob(k) for k in image_keys]), dtype=np.float32)
        for key, vec in zip(image_keys, vecs):
            self.tables.image_embeddings[(spec.key, content_id(key))] = vec
        self._count(spec, "doc", len(image_keys), t0)

    def _text_batch(self, spec: FeatureSpec, texts: list[str]) -> None:
        enc = self.model(spec)
        t0 = time.perf_counter()
        vecs = np.asarray(enc.embed_texts(list(texts)), dtype=np.float32)
        for text, vec in zip(texts, vecs):
            self._texts[(spec.key, text)] = vec
            self.tables.text_embeddings[(spec.key, text_id(text))] = vec
        self._count(spec, "doc", len(texts), t0)

    def precompute(self, observations: Iterable["Observation"], architectures: Iterable[Any], *,
                   batch_size: int = 32) -> dict[str, int]:
        """Compute, in batches, every feature ``architectures`` need for ``observations``:
        captions, then image embeddings, then the document texts (which may contain captions).
        Returns the number of features computed per kind."""
        obs = list(observations)
        archs = list(architectures)
        needed = {fs for a in archs for fs in a.required_features()}
        done: Counter = Counter()
        visits: dict[str, tuple[str | None, str | None]] = {}
        for o in obs:
            visits.setdefault(caption_id(o.image_key, o.url_hash), (o.image_key, o.url_hash))
        for fs in sorted((f for f in needed if f.kind == "caption"), key=lambda f: f.key):
            todo = [v for cid, v in visits.items() if (fs.key, cid) not in self.tables.captions]
            for i in range(0, len(todo), batch_size):
                self._caption_batch(fs, todo[i:i + batch_size])
            done["caption"] += len(todo)
        images = list(dict.fromkeys(o.image_key for o in obs if o.image_key))
        for fs in sorted((f for f in needed if f.kind == "image_embedding"), key=lambda f: f.key):
            todo = [k for k in images if (fs.key, content_id(k)) not in self.tables.image_embeddings]
            for i in range(0, len(todo), batch_size):
                self._image_batch(fs, todo[i:i + batch_size])
            done["image_embedding"] += len(todo)
        docs: dict[FeatureSpec, dict[str, None]] = {}
        for a in archs:
            for o in obs:
                for fs, text in a.documents(o, self):
                    docs.setdefault(fs, {})[text] = None
        for fs, texts in sorted(docs.items(), key=lambda kv: kv[0].key):
            todo = [t for t in texts if (fs.key, t) not in self._texts]
            for i in range(0, len(todo), batch_size):
                self._text_batch(fs, todo[i:i + batch_size])
            done["text_embedding"] += len(todo)
        return dict(done)
