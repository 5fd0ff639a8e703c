"""Image-token budgets: what k images of a size cost a model variant, and whether they fit.

Pure functions over a catalogue entry (:class:`vismem.serve.models.ModelSpec`): nothing is
loaded or built. The pixel bounds are the model YAML's, the same ones both runners apply: a vLLM
VLM's ``deploy.engine_kwargs.mm_processor_kwargs``, an embedder's or transformers backend's
``args.min_pixels`` / ``args.max_pixels``. The context is ``deploy.engine_kwargs.max_model_len``
(vLLM VLMs) or ``args.vllm_kwargs.max_model_len`` (vLLM embedders).

Image tokens per family:

* Qwen2.5-VL: the image is resized (``smart_resize``) to multiples of 28 px (14 px patches,
  2×2 merge) within ``[min_pixels, max_pixels]``; one token per 28×28 unit, plus the
  ``<|vision_start|>`` / ``<|vision_end|>`` pair;
* Qwen3-VL: the same on 32 px units (16 px patches, 2×2 merge);
* Gemini: 258 tokens per image.

Streams per replica from KV capacity (:func:`kv_streams`, the model YAML's ``serving:`` block):
vLLM gives the KV cache what is left of ``gpu_memory_utilization`` of the replica's GPUs after
the weights and the activation/CUDA-graph overhead; a request of ``T`` tokens (prompt + reply)
holds ``T x kv_bytes_per_token`` of it, so ``kv_tokens // T`` requests fit at once, capped by
vLLM's ``max_num_seqs``. A deployment's ``target_ongoing_requests`` should not exceed that count
at the workload's request size (more would queue in the engine, not batch); setting it to that
count lets Serve add a replica only when the KV cache of the ones running is full. So each model
YAML's target (and ``max_ongoing_requests``) is :func:`kv_target`: that count at the typical
request its ``serving.request_tokens`` names (a test checks every YAML against it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from vismem.core.errors import ConfigError
from vismem.serve.models import ModelSpec

#: family -> (unit px, default min_pixels, default max_pixels): the processors' own defaults.
QWEN_FAMILIES: dict[str, tuple[int, int, int]] = {
    "qwen2.5-vl": (28, 56 * 56, 28 * 28 * 16384),
    "qwen3-vl": (32, 65_536, 16_777_216),
}
#: Tokens around each image's pads (``<|vision_start|>``, ``<|vision_end|>``).
QWEN_DELIMITERS = 2
GEMINI_IMAGE_TOKENS = 258
#: Registered backends whose family is fixed (the rest are read from the model id or path).
_BACKEND_FAMILY = {"qwen3-vl-embedding": "qwen3-vl", "jina-embeddings-v4": "qwen2.5-vl"}


def smart_resize(width: int, height: int, unit: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """The ``(width, height)`` a Qwen-VL processor resizes an image to: multiples of ``unit``,
    aspect kept, area within ``[min_pixels, max_pixels]``."""
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h = max(unit, round(height / unit) * unit)
    w = max(unit, round(width / unit) * unit)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(unit, math.floor(height / beta / unit) * unit)
        w = max(unit, math.floor(width / beta / unit) * unit)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / unit) * unit
        w = math.ceil(width * beta / unit) * unit
    return w, h


def image_family(ms: ModelSpec) -> str | None:
    """``qwen2.5-vl``, ``qwen3-vl``, ``gemini`` or None (no image-token rule known)."""
    if ms.name in _BACKEND_FAMILY:
        return _BACKEND_FAMILY[ms.name]
    ident = " ".join(str(ms.args.get(k, "")) for k in ("model", "path")).lower().replace("_", ".")
    for needle, family in (("qwen2.5-vl", "qwen2.5-vl"), ("qwen3-vl", "qwen3-vl"), ("gemini", "gemini")):
        if needle in ident:
            return family
    return None


def _engine_kwargs(ms: ModelSpec) -> dict[str, Any]:
    deploy = ms.deploy or {}
    if deploy.get("engine") == "vllm":
        return dict(deploy.get("engine_kwargs") or {})
    return dict(ms.args.get("vllm_kwargs") or {})


def pixel_bounds(ms: ModelSpec) -> dict[str, int]:
    """The variant's ``min_pixels`` / ``max_pixels`` as its YAML sets them (either may be absent)."""
    deploy = ms.deploy or {}
    src = ((deploy.get("engine_kwargs") or {}).get("mm_processor_kwargs") or {}
           if deploy.get("engine") == "vllm" else ms.args)
    return {k: int(src[k]) for k in ("min_pixels", "max_pixels") if src.get(k) is not None}


def max_model_len(ms: ModelSpec) -> int | None:
    """The variant's vLLM context length, or None where none is set (hosted APIs, transformers)."""
    value = _engine_kwargs(ms).get("max_model_len")
    return int(value) if value is not None else None


def tokens_per_image(ms: ModelSpec, size: tuple[int, int]) -> int:
    """Tokens one image of ``size`` = ``(width, height)`` costs the variant."""
    family = image_family(ms)
    if family == "gemini":
        return GEMINI_IMAGE_TOKENS
    if family not in QWEN_FAMILIES:
        raise ConfigError(f"model {ms.variant!r}: no image-token rule (known families: "
                          f"{', '.join([*QWEN_FAMILIES, 'gemini'])})")
    unit, lo, hi = QWEN_FAMILIES[family]
    bounds = pixel_bounds(ms)
    w, h = smart_resize(int(size[0]), int(size[1]), unit, bounds.get("min_pixels", lo), bounds.get("max_pixels", hi))
    return (w // unit) * (h // unit) + QWEN_DELIMITERS


@dataclass(frozen=True)
class ImageBudget:
    """What ``k`` images cost ``variant``: ``image_tokens`` against ``max_model_len`` (None: no
    limit known) after ``reserve`` tokens for the text and the reply."""

    variant: str
    k: int
    per_image: int
    image_tokens: int
    reserve: int
    max_model_len: int | None

    @property
    def fits(self) -> bool:
        return self.max_model_len is None or self.image_tokens + self.reserve <= self.max_model_len


def image_budget(ms: ModelSpec, size: tuple[int, int], k: int, *, reserve: int = 0) -> ImageBudget:
    """The :class:`ImageBudget` of ``k`` images of ``size`` (the tallest unit's) for ``ms``."""
    if k < 0 or reserve < 0:
        raise ValueError(f"k and reserve must be >= 0, got k={k}, reserve={reserve}")
    per = tokens_per_image(ms, size)
    return ImageBudget(ms.variant, int(k), per, per * int(k), int(reserve), max_model_len(ms))


def check_image_budget(ms: ModelSpec, size: tuple[int, int], k: int, *, reserve: int = 0) -> ImageBudget:
    """:func:`image_budget`, raising a one-line :class:`ConfigError` naming the variant and ``k``
    when the images (plus ``reserve``) exceed ``max_model_len``."""
    b = image_budget(ms, size, k, reserve=reserve)
    if not b.fits:
        raise ConfigError(
            f"model {b.variant!r}: k={b.k} images of {size[0]}x{size[1]} px cost {b.image_tokens} tokens "
            f"({b.per_image} each) + {b.reserve} reserved > max_model_len {b.max_model_len}; "
            f"lower k or the variant's max_pixels")
    return b


#: vLLM's default cap on the sequences one engine batches (``max_num_seqs``).
DEFAULT_MAX_NUM_SEQS = 256


def kv_streams(ms: ModelSpec, tokens_per_request: float) -> dict[str, float] | None:
    """Requests one replica of ``ms`` holds at once at ``tokens_per_request`` tokens each (see the
    module doc), as ``{tp, kv_tokens, per_replica, per_gpu}``; None without a ``serving:`` block."""
    sv = ms.serving
    if not sv:
        return None
    try:
        per_tok = float(sv["kv_bytes_per_token"])
        gpu_gb, weights_gb = float(sv["gpu_memory_gb"]), float(sv["weights_gb"])
        overhead_gb = float(sv.get("overhead_gb", 0.0))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"model {ms.variant!r}: serving needs numeric kv_bytes_per_token, gpu_memory_gb and "
                          f"weights_gb ({e})") from None
    if per_tok <= 0 or gpu_gb <= 0:
        raise ConfigError(f"model {ms.variant!r}: serving.kv_bytes_per_token and gpu_memory_gb must be positive")
    ek = _engine_kwargs(ms)
    tp = int(ek.get("tensor_parallel_size") or 1)
    util = float(ek.get("gpu_memory_utilization") or 0.9)
    kv_tokens = max(0.0, (gpu_gb * tp * util - weights_gb - overhead_gb) * 1e9 / per_tok)
    seqs = int(ek.get("max_num_seqs") or DEFAULT_MAX_NUM_SEQS)
    per_replica = float(min(seqs, int(kv_tokens // max(1.0, float(tokens_per_request)))))
    return {"tp": tp, "kv_tokens": kv_tokens, "per_replica": per_replica, "per_gpu": per_replica / tp}


def kv_target(ms: ModelSpec) -> int | None:
    """The autoscaling target of ``ms``'s deployment: the requests one replica holds at once at its
    typical request (``serving.request_tokens``); None without a ``serving:`` block."""
    sv = ms.serving
    if not sv:
        return None
    try:
        tokens = float(sv["request_tokens"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"model {ms.variant!r}: serving needs a numeric request_tokens (the typical "
                          f"request's prompt + reply tokens)") from None
    kv = kv_streams(ms, tokens)
    return max(1, int(kv["per_replica"])) if kv else None
