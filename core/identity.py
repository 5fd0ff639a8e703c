"""What identifies a component for a cache: one rule for every content-addressed key.

A component spec ``{name, args}`` mixes what a model *computes* (its weights, prompt, layout,
sampling) with how it is *reached* (endpoint, credentials, timeouts, concurrency, device, batch
size, display label, the folder its weights sit in). Caches key on the first only, so the same
model reached another way shares trajectories, probes and features, and a different model or
prompt never does. Every cache key builder (trajectory slugs, probe units, feature tables) reads
:func:`content_key`; nothing else decides it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Mapping

from vismem.core.secrets import is_secret_name

#: Arguments that change how a model is reached, never what it computes.
TRANSPORT_ARGS = frozenset({
    "base_url", "api_key", "api_key_env", "timeout_s", "connect_timeout_s", "max_retries", "backoff_s",
    "backoff_max_s", "max_concurrency", "concurrency", "sleep_s", "device", "batch_size", "label", "data_dir",
    "on_error", "image_detail",
})


def content_key(spec: Any) -> Any:
    """The spec with transport-only and credential args removed (recursively) and model paths cut
    to their directory name (``/models/siglip2-base-patch16-384`` and ``/mnt/m/siglip2-...``
    agree; ``tiny:`` test models keep their whole name)."""
    if isinstance(spec, Mapping):
        out = {}
        for k, v in spec.items():
            if k in TRANSPORT_ARGS or is_secret_name(k):  # a credential never keys a cache
                continue
            if k == "path" and isinstance(v, str) and not v.startswith("tiny:"):
                v = os.path.basename(v.rstrip("/"))
            out[k] = content_key(v)
        return out
    if isinstance(spec, (list, tuple)):
        return [content_key(v) for v in spec]
    return spec


def content_digest(doc: Any, n: int = 16) -> str:
    """First ``n`` hex digits of the SHA-256 of ``doc`` as canonical JSON (sorted keys, compact)."""
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]
