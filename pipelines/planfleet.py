"""The endpoints ``vismem plan`` reasons about: what serves a back-end, and how many calls it takes at once.

A back-end as a config names it (a model variant, ``deployed:NAME``, or a ``{name, args}`` spec)
becomes an :class:`Endpoint`:

* ``gpu``: a model YAML with a ``deploy:`` block -- vLLM replicas on the cluster's GPUs;
* ``hosted``: an ``openai`` spec (named or bare) without one -- an API someone else runs;
* ``local``: anything else (a scripted stand-in, an in-process model): no fleet, no cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from vismem.serve.models import ModelSpec


@dataclass(frozen=True)
class Endpoint:
    """One back-end's serving facts (see the module doc)."""

    name: str
    kind: Literal["gpu", "hosted", "local"]
    spec: ModelSpec
    client_cap: int | None = None                  # the client's max_concurrency
    price: dict[str, Any] | None = None            # USD per million tokens: input, output
    deploy: dict[str, Any] = field(default_factory=dict)

    def fleet(self, tokens_per_call: float, gpus: int, streams_override: float | None = None) -> dict[str, Any]:
        """A GPU endpoint's capacity on ``gpus`` GPUs at ``tokens_per_call`` tokens a request:
        replicas ``min(max_replicas, gpus // tensor_parallel_size)``, streams per replica from KV
        capacity (or ``streams_override`` per GPU, or ``target_ongoing_requests`` without a
        ``serving:`` block), ``capacity = replicas x min(streams, max_ongoing_requests)``, and
        ``fill = replicas x target_ongoing_requests`` (the in-flight calls that scale Serve to them)."""
        from vismem.serve.budget import kv_streams

        tp = int((self.deploy.get("engine_kwargs") or {}).get("tensor_parallel_size") or 1)
        target = float(self.deploy.get("target_ongoing_requests") or 8.0)
        replicas = max(1, min(int(self.deploy.get("max_replicas") or 1), gpus // tp))
        if streams_override is not None:
            per_replica, source = float(streams_override) * tp, "--rate streams_per_gpu"
        else:
            kv = kv_streams(self.spec, tokens_per_call)
            if kv is not None:
                per_replica, source = kv["per_replica"], f"KV cache at {tokens_per_call:,.0f} tokens a request"
            else:
                per_replica, source = target, "target_ongoing_requests (no serving: block)"
        per_replica = max(1.0, per_replica)
        # Serve routes at most max_ongoing_requests to a replica, and adds replicas only while each
        # has more than target_ongoing_requests: max_replicas x target is what fills the fleet.
        routed = float(self.deploy.get("max_ongoing_requests") or per_replica)
        return {"tp": tp, "target": target, "replicas": replicas, "streams_per_replica": per_replica,
                "streams_per_gpu": per_replica / tp, "streams_from": source,
                "capacity": replicas * min(per_replica, routed), "fill": replicas * target}


def endpoint_of(raw: Any) -> Endpoint:
    """The :class:`Endpoint` of a configured back-end (string, ``{name, args}`` or ComponentSpec)."""
    from vismem.serve.models import list_models, load_model_spec

    if hasattr(raw, "raw"):
        raw = raw.raw()
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict):
        raise TypeError(f"a back-end spec must be a name or a {{name, args}} mapping, got {type(raw).__name__}")
    key = str(raw.get("model") or raw.get("name") or "?")
    over = dict(raw.get("args") or {})
    if key.startswith("deployed:"):
        key = key.split(":", 1)[1]
    if key in list_models("vlm"):
        base = load_model_spec(key)
        ms = base.model_copy(update={"args": {**base.args, **over}})
        cap = ms.args.get("max_concurrency")
        kind = "gpu" if ms.deploy else ("hosted" if ms.name == "openai" else "local")
        return Endpoint(key, kind, ms, int(cap) if cap else None, ms.price, dict(ms.deploy or {}))
    ms = ModelSpec(variant=key, kind="vlm", name=key, args=over)
    cap = over.get("max_concurrency")
    if key == "openai":
        label = str(over.get("label") or over.get("model") or "openai")
        return Endpoint(label, "hosted", ms, int(cap) if cap else None, None)
    return Endpoint(key, "local", ms, int(cap) if cap else None, None)

def image_tokens(ep: Endpoint, px: float, default: float) -> float:
    """Tokens of one ``px``-square image for ``ep``'s model family (``default`` with no family rule)."""
    from vismem.serve.budget import image_family, tokens_per_image

    if image_family(ep.spec) is None:
        return float(default)
    side = max(1, int(math.floor(px)))
    return float(tokens_per_image(ep.spec, (side, side)))
