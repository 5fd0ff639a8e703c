"""DMV-Bench report inputs that live outside the result tables: Table 7 and the stored captions.

* :func:`architectures_frame`: Table 7 -- each configured architecture as choices over encode
  (the features its bank stores, from ``required_features``), retrieve and inject (the variant's
  labels), with the paper's row it reproduces.
* :func:`captions_frame`: every caption the replay stage stored (``features/<spec_key>/`` in the
  store, :func:`vismem.pipelines.dmv.features.load_parts`) of a product image the run's chains
  visited, with that product's cue colour and object, for the cue-verbalisation rate
  (:func:`vismem.analysis.captions.cue_verbalisation`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vismem.core.store import Store
    from vismem.pipelines.config import RunConfig

_KIND = {"caption": "caption", "image_embedding": "image embedding", "text_embedding": "text embedding"}


def architectures_frame(config: "RunConfig") -> Any:
    """Table 7 rows of the run's architectures (Polars), in configured order."""
    import polars as pl

    from vismem.memory.agent.variants import list_variants, load_variant
    from vismem.pipelines.dmv.chains import build_architectures

    rows, known = [], set(list_variants())
    for a in build_architectures(config):
        name = getattr(a, "variant", None) or a.name
        v = load_variant(name) if name in known else None
        labels = dict(v.labels) if v else {}
        feats = [f"{_KIND.get(f.kind, f.kind)} ({f.label})" for f in a.required_features()]
        retrieve = str(labels.get("retrieval", "—"))
        if labels.get("alpha") is not None and retrieve == "hybrid":
            retrieve += f" (alpha {labels['alpha']})"
        rows.append({"architecture": a.name, "encode": ", ".join(feats) or "nothing", "retrieve": retrieve,
                     "inject": str(labels.get("injection", "—")), "study": v.study if v else "main",
                     "paper": (v.paper if v and getattr(v, "paper", None) else None)})
    schema = {"architecture": pl.String, "encode": pl.String, "retrieve": pl.String, "inject": pl.String,
              "study": pl.String, "paper": pl.String}
    return pl.DataFrame(rows, schema=schema)


def captions_frame(store: "Store", config: "RunConfig") -> Any:
    """One row per (captioner, product image the run's chains visited) with a stored caption:
    ``captioner``, ``caption``, ``cue_color``, ``cue_object``; None when no architecture captions
    or no caption is stored."""
    import polars as pl

    from vismem.memory.agent.features import content_id
    from vismem.pipelines.dmv.chains import build_architectures, chain_observations, missing_sessions, plan_chains
    from vismem.pipelines.dmv.features import load_parts
    from vismem.pipelines.dmv.protocol import cue_lookup

    specs = {f.key: f for a in build_architectures(config) for f in a.required_features() if f.kind == "caption"}
    if not specs:
        return None
    chains = plan_chains(config)
    J = config.encode.J
    if missing_sessions(store, chains, J):
        return None
    images: dict[str, str] = {}  # content id -> url hash, first visit first
    for c in chains:
        for o in chain_observations(store, c, J):
            if o.image_key:
                images.setdefault(content_id(o.image_key), o.url_hash)
    cues = cue_lookup(config)
    rows = []
    for fs in specs.values():
        stored = load_parts(store, fs)
        for cid, h in images.items():
            if cid in stored and h in cues:
                rows.append({"captioner": fs.label, "caption": stored[cid], "cue_color": cues[h][0],
                             "cue_object": cues[h][1]})
    return pl.DataFrame(rows, schema={"captioner": pl.String, "caption": pl.String, "cue_color": pl.String,
                                      "cue_object": pl.String}) if rows else None


def dmv_extras(store: "Store", config: "RunConfig") -> dict[str, Any]:
    """``{"dmv_architectures": ..., "dmv_captions": ...}`` for the report (what exists)."""
    out: dict[str, Any] = {}
    if config.memory.architectures:
        out["dmv_architectures"] = architectures_frame(config)
    caps = captions_frame(store, config) if config.memory.architectures else None
    if caps is not None:
        out["dmv_captions"] = caps
    return out


__all__ = ["architectures_frame", "captions_frame", "dmv_extras"]
