"""``ocr-minilm``: a pixel reader — offline OCR of each shot, then MiniLM over the text.

The local stand-in for Qwen3-VL-Embedding on memory shots: it sees only the image, so its
retrieval numbers depend on the shots being legible (the read rate, ``vismem.memory.dialogue.readrate``).
It is *not* a multimodal embedder: every result names it as a stand-in.

OCR engines sit behind :class:`OcrEngine` (``read(image) -> str``), by name in :data:`OCR_ENGINES`:

* ``rapidocr-lines`` (default) — PP-OCRv4's recogniser (the ONNX model shipped inside the
  ``rapidocr-onnxruntime`` wheel, run with onnxruntime on CPU) over text lines found from pixels
  (``vismem.serve.embedders.ocr_pixels``: no detector, polarity-normalised, spaces restored from pixel
  word gaps). On conv-26 it reads 99.9 % of the words shown, against 61 % for the stock
  pipeline below and 98.5 % for Tesseract with polarity handling (``bench/memshot_ocr.py``).
* ``rapidocr`` — the stock RapidOCR pipeline (detector + classifier + recogniser) on the RGB
  image; for arbitrary images, and the fallback for blocks that are not text lines.

``rapidocr-lines`` is deterministic: a line's tensor depends on that line alone (its own
width bucket, background padding), so results depend neither on batching nor on the thread
count (conv-26 reads identically with 1 and 2), and a per-process line cache keyed by the
line's pixels is exact (overlapping shots repeat two turn-pairs; names repeat in every
shot). No model is ever downloaded: the weights are files of the installed wheel.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vismem.core.registry import Registry
from vismem.serve.embed import l2_normalise
from vismem.serve.registry import EMBEDDERS
from vismem.serve.embedders import ocr_pixels as px

STANDS_IN_FOR = "qwen3-vl-embedding"
#: Registered embedders that read shots as text first (``read_images`` + ``embed_ocr_texts`` +
#: ``ocr_key``): pipelines run their OCR as a cached job before embedding.
PIXEL_READERS = frozenset({"ocr-minilm"})


def is_pixel_reader(spec: dict[str, Any]) -> bool:
    """Whether a resolved ``{name, args}`` spec builds a pixel reader (see :data:`PIXEL_READERS`)."""
    return str(spec.get("name")) in PIXEL_READERS


@runtime_checkable
class OcrEngine(Protocol):
    """Reads the text of one image (encoded bytes or a PIL image), lines separated by ``\\n``."""

    name: str
    #: What determines the text read from given pixels (engine, output-affecting settings, model
    #: wheel version, code revision): with the image's content hash, a cache key for its text.
    key: str

    def read(self, image: Any) -> str:
        ...


#: OCR engines by name (``vismem list ocr-engines``): an argument of ``ocr-minilm``, not a
#: component a run configures on its own. Both built-ins are registered in this module.
OCR_ENGINES: Registry[OcrEngine] = Registry("ocr_engine")


def rapidocr_models_dir() -> Path:
    """The ``models/`` folder inside the installed ``rapidocr-onnxruntime`` wheel (found
    without importing the package, which pulls OpenCV and its whole pipeline)."""
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("rapidocr-onnxruntime is not installed (it ships the OCR models)",
                                  name="rapidocr_onnxruntime")
    return Path(spec.origin).parent / "models"


#: Bump when a change to this module or ``ocr_pixels`` changes what is read (invalidates caches).
REVISION = 1


def _wheel_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rapidocr-onnxruntime")
    except PackageNotFoundError:
        return "unknown"


def _threads(threads: int | None) -> int:
    return max(1, int(threads) if threads else min(2, os.cpu_count() or 1))


@OCR_ENGINES.register("rapidocr")
class RapidOcr:
    """The stock RapidOCR pipeline (PP-OCRv4 det + cls + rec) on the image as RGB.

    Args: threads: onnxruntime intra-op threads (default: up to 2); text_score: minimum line
    confidence kept.
    """

    name = "rapidocr"

    def __init__(self, *, threads: int | None = None, text_score: float = 0.5) -> None:
        from rapidocr_onnxruntime import RapidOCR

        n = _threads(threads)
        self.engine = RapidOCR(intra_op_num_threads=n, inter_op_num_threads=1, text_score=text_score)
        self.key = self.key_for(text_score=text_score)
        self._lock = threading.Lock()

    @staticmethod
    def key_for(*, text_score: float = 0.5, **_: Any) -> str:
        """The cache key of an engine built with these args (what it reads depends on them)."""
        return f"rapidocr/r{REVISION}/{_wheel_version()}/s{text_score}"

    def read_array(self, rgb: np.ndarray) -> str:
        """OCR of an ``(H, W, 3)`` RGB or ``(H, W)`` grey uint8 array."""
        if rgb.ndim == 2:
            rgb = np.repeat(rgb[:, :, None], 3, axis=2)
        with self._lock:
            res, _ = self.engine(np.ascontiguousarray(rgb[:, :, ::-1]))  # RapidOCR wants BGR
        return "\n".join(r[1] for r in (res or []))

    def read(self, image: Any) -> str:
        # Decode ourselves: RapidOCR reads a palette PNG's indices as grey levels.
        return self.read_array(px.decode_rgb(image))


@OCR_ENGINES.register("rapidocr-lines")
class RapidLineOcr:
    """PP-OCRv4 recognition over pixel-segmented, polarity-normalised lines (module docstring).

    Args:
        threads: onnxruntime intra-op threads (default: up to 2; give 1 per Ray actor).
        batch_size: lines per recogniser call (lines of one width bucket).
        width_bucket: line tensors are padded to a multiple of this width (in 48-px-high input
            pixels): small enough to waste little compute, coarse enough to batch.
        word_gap: minimum blank column run (px) between words (see ``ocr_pixels``).
        cache_lines: size of the per-process line cache (0 disables it).
        height: recogniser input height (48, its training height; 40 reads 0.4 % fewer words
            for 35 % less CPU, 32 fails).
        pad: background margin around each line before resizing (4 px read best of 2-10).
    """

    name = "rapidocr-lines"

    def __init__(self, *, threads: int | None = None, batch_size: int = 8, width_bucket: int = 128,
                 word_gap: int = 4, cache_lines: int = 50_000, height: int = 48, pad: int = 4) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = _threads(threads)
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        # Idle worker threads spin by default, burning the other core of a 2-core machine.
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model = rapidocr_models_dir() / "ch_PP-OCRv4_rec_infer.onnx"
        self.session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        self._input = self.session.get_inputs()[0].name
        chars = self.session.get_modelmeta().custom_metadata_map["character"].splitlines()
        self.alphabet = ["", *chars, " "]  # CTC blank first; the trained space last
        self.height = int(height)
        self.pad = int(pad)
        self.batch_size = int(batch_size)
        self.width_bucket = int(width_bucket)
        self.word_gap = int(word_gap)
        self.cache_size = int(cache_lines)
        self._cache: OrderedDict[bytes, list[tuple[str, float]]] = OrderedDict()
        self._fallback: RapidOcr | None = None
        self._threads = threads
        self._lock = threading.Lock()
        self.stats = {"lines": 0, "cached": 0, "tall": 0}
        # threads / batch_size / cache_lines do not change what is read (per-line tensors).
        self.key = self.key_for(height=self.height, pad=self.pad, word_gap=self.word_gap,
                                width_bucket=self.width_bucket)

    @staticmethod
    def key_for(*, height: int = 48, pad: int = 4, word_gap: int = 4, width_bucket: int = 128, **_: Any) -> str:
        """The cache key of an engine built with these args (threads and batching change nothing read)."""
        return (f"rapidocr-lines/r{REVISION}/{_wheel_version()}/h{int(height)}-p{int(pad)}"
                f"-g{int(word_gap)}-w{int(width_bucket)}")

    def _tensor(self, ink: np.ndarray, width: int) -> np.ndarray:
        import cv2  # the recogniser was trained on cv2's bilinear resize

        h, w = ink.shape
        rw = min(width, max(1, math.ceil(self.height * w / h)))
        x = cv2.resize(ink, (rw, self.height)).astype(np.float32) / 127.5 - 1.0
        out = np.ones((3, self.height, width), np.float32)  # pad with background (white), not grey
        out[:, :, :rw] = x
        return out

    def _width(self, ink: np.ndarray) -> int:
        w = math.ceil(self.height * ink.shape[1] / ink.shape[0])
        return max(self.width_bucket, -(-w // self.width_bucket) * self.width_bucket)

    def recognise(self, inks: list[np.ndarray]) -> list[list[tuple[str, float]]]:
        """Characters with their centre x (line pixels) for each ink-map line."""
        out: list[list[tuple[str, float]] | None] = [None] * len(inks)
        todo: dict[bytes, list[int]] = {}
        with self._lock:
            for i, ink in enumerate(inks):
                key = hashlib.blake2b(ink.tobytes(), digest_size=16, person=b"%dx%d" % ink.shape).digest()
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    out[i] = hit
                    self.stats["cached"] += 1
                else:
                    todo.setdefault(key, []).append(i)
            self.stats["lines"] += len(inks)
            by_width: dict[int, list[bytes]] = {}
            for key, idx in todo.items():
                by_width.setdefault(self._width(inks[idx[0]]), []).append(key)
            for width in sorted(by_width):
                keys = by_width[width]
                for b in range(0, len(keys), self.batch_size):
                    part = keys[b:b + self.batch_size]
                    batch = np.stack([self._tensor(inks[todo[k][0]], width) for k in part])
                    probs = self.session.run(None, {self._input: batch})[0]
                    for k, p in zip(part, probs):
                        chars = self._decode(p, inks[todo[k][0]].shape[0] / self.height * width / p.shape[0])
                        for i in todo[k]:
                            out[i] = chars
                        if self.cache_size:
                            self._cache[k] = chars
                            if len(self._cache) > self.cache_size:
                                self._cache.popitem(last=False)
        return out  # type: ignore[return-value]

    def _decode(self, probs: np.ndarray, px_per_step: float) -> list[tuple[str, float]]:
        """Greedy CTC: argmax per step, collapse repeats, drop blanks; x = step centre."""
        best = probs.argmax(axis=-1)
        keep = np.ones(best.shape, bool)
        keep[1:] = best[1:] != best[:-1]
        keep &= best != 0
        return [(self.alphabet[best[t]], (t + 0.5) * px_per_step) for t in np.flatnonzero(keep)]

    def read_lines(self, rgb: np.ndarray) -> list[str]:
        """The text of each line of an RGB array, in reading order."""
        lines = px.text_lines(rgb, pad=self.pad)
        flat = [ln for ln in lines if not ln.tall]
        chars = iter(self.recognise([ln.ink for ln in flat]))
        out = []
        for ln in lines:
            if ln.tall:  # not a text line at this scale: let the detector find the lines
                self.stats["tall"] += 1
                if self._fallback is None:
                    self._fallback = RapidOcr(threads=self._threads)
                text = self._fallback.read_array(ln.ink)
            else:
                text = px.respace(next(chars), px.word_gaps(ln.ink, self.word_gap))
            text = px.fix_zero_letter(text)
            if text:
                out.append(text)
        return out

    def read(self, image: Any) -> str:
        return "\n".join(self.read_lines(px.decode_rgb(image)))


def build_ocr_engine(spec: dict | str | OcrEngine) -> OcrEngine:
    """An engine from a spec (``"rapidocr-lines"`` or ``{"name", "args"}``), or as given."""
    if not isinstance(spec, (str, dict)):
        return spec
    name, args = (spec, {}) if isinstance(spec, str) else (spec.get("name"), dict(spec.get("args") or {}))
    if name not in OCR_ENGINES:
        raise ValueError(f"unknown OCR engine {name!r}; known: {', '.join(OCR_ENGINES.names())}")
    return OCR_ENGINES.factory(name)(**args)


def reader_ocr_key(spec: dict[str, Any]) -> str | None:
    """The ``ocr_key`` a pixel reader built from the resolved ``spec`` will have, without loading
    any model (None when its engine cannot say): lets a driver find fully cached shots first."""
    if not is_pixel_reader(spec):
        return None
    eng = (spec.get("args") or {}).get("ocr", "rapidocr-lines")
    name, args = (eng, {}) if isinstance(eng, str) else (eng.get("name"), dict(eng.get("args") or {}))
    cls = OCR_ENGINES.factory(name) if name in OCR_ENGINES else None
    key_for = getattr(cls, "key_for", None)
    return key_for(**args) if key_for is not None else None


@EMBEDDERS.register("ocr-minilm", stand_in=True)
class OcrMiniLMEmbedder:
    """MiniLM over OCR text: images → ``minilm(ocr(image))``; texts and queries → ``minilm(text)``.

    Args:
        ocr: OCR engine spec (default ``rapidocr-lines``; see :data:`OCR_ENGINES`).
        minilm: arguments of the ``minilm`` embedder (default: the packaged all-MiniLM-L6-v2).

    A text paired with an image in :meth:`embed_images` is prepended to the image's OCR text
    (one input, as Qwen3-VL-Embedding embeds an image+text pair as one input). For caching,
    a pipeline can split the two steps: :meth:`read_images` (OCR, keyed by shot content) then
    :meth:`embed_ocr_texts`.
    """

    stand_in = True
    stands_in_for = STANDS_IN_FOR

    def __init__(self, *, ocr: dict | str = "rapidocr-lines", minilm: dict | None = None) -> None:
        from vismem.serve.embedders.minilm import MiniLMEmbedder

        self.ocr = build_ocr_engine(ocr)
        self.text = MiniLMEmbedder(**(minilm or {}))
        self.dim = self.text.dim
        self.name = f"ocr-minilm:{self.ocr.name}+{self.text.name.split(':', 1)[-1]}"
        self.ocr_key = self.ocr.key  # cache OCR text under (ocr_key, sha256 of the image bytes)

    def read_images(self, images: list[Any]) -> list[str]:
        """The OCR text of each image (raises ``ValueError`` naming the index of a bad one)."""
        out = []
        for i, img in enumerate(images):
            try:
                out.append(self.ocr.read(img))
            except ValueError as err:
                raise ValueError(f"image {i}: {err}") from err
        return out

    def embed_ocr_texts(self, texts: list[str]) -> np.ndarray:
        """Embed already-read OCR texts (what :meth:`embed_images` does after reading)."""
        return self.text.embed_texts(list(texts))

    def embed_images(self, images: list[Any], texts: list[str] | None = None) -> np.ndarray:
        if texts is not None and len(texts) != len(images):
            raise ValueError(f"{len(texts)} texts for {len(images)} images")
        read = self.read_images(images)
        if texts is not None:
            read = [f"{t}\n{r}" if t else r for t, r in zip(texts, read)]
        return self.embed_ocr_texts(read)  # MiniLM returns unit vectors, and (0, dim) for no input

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return self.text.embed_texts(list(texts))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """MiniLM is symmetric: queries embed like documents."""
        return self.text.embed_texts(list(texts))
