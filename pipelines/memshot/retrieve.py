"""MemShot retrieval: which embedder reads which units, embedding units and questions
(cached per embedder and content), ranking, and the labels results carry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext


SUMMARY_SCHEMA_VERSION = 1
#: Under the run prefix: one table per retriever role of each (variant, question)'s first
#: evidence unit in the whole ranking (:func:`vismem.memory.dialogue.retrieval.evidence_ranks`).
EVIDENCE_RANKS = "memshot/evidence_ranks"


def dataset_name(cfg: Any) -> str:
    """The MemShot config's dialogue dataset name."""
    return cfg.dataset


def no_evidence_rule(dataset: str) -> str:
    """How evidence recall treats a question without evidence turns, as each dataset's official
    code does: LoCoMo's ``eval_question_answering`` scores it 1 (``"one"``); LongMemEval's
    retrieval evaluation leaves it out (``"drop"``)."""
    return "drop" if dataset == "longmemeval" else "one"


def embedder_groups(units: Any, cfg: Any) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """``(role, spec, units)`` per embedder: text units → text_embedder, image units → image_embedder."""
    import polars as pl

    from vismem.serve.registry import EMBEDDERS

    # A pixel reader's shots arrive as "ocr" rows (their text read from pixels): still image units.
    for role, modality, spec in (("text_embedder", ("text",), cfg.text_embedder),
                                 ("image_embedder", ("image", "ocr"), cfg.image_embedder)):
        group = units.filter(pl.col("modality").is_in(list(modality)))
        if group.height and spec is not None:
            yield role, EMBEDDERS.resolve(spec, field=f"memshot.{role}"), group


def cached_vectors(ctx: "RunContext", key: str) -> dict[str, tuple[Any, float]]:
    """``item_id -> (vector, embed seconds)`` of the run's embedding cache at ``key``. A damaged
    table (not a whole table, other columns) is named in the log and dropped: its vectors are
    embedded again, never ranked from. One past its bound (TooLarge) or a store fault ends the run."""
    import numpy as np

    from vismem.core.errors import StoreError

    try:
        old = ctx.store.read_table(key)
        mat = np.asarray(old["embedding"].to_numpy(), dtype=np.float32)
        ids, secs = old["item_id"].to_list(), old["embed_s"].to_list()
        if mat.ndim != 2 or len(mat) != len(ids):
            raise ValueError(f"embedding matrix of shape {mat.shape} for {len(ids)} items")
        return {i: (mat[j], float(t)) for j, (i, t) in enumerate(zip(ids, secs))}
    except StoreError:
        raise
    except Exception as err:  # noqa: BLE001 - a damaged cache, whatever broke it: embedded again
        ctx.logger.warning("damaged cache table %s (%s): discarded, embedding again", key, type(err).__name__)
        ctx.store.delete(key)
        return {}


def retrieve_units(ctx: "RunContext", role: str, spec: dict[str, Any], units: Any, questions: Any, *,
                   full: bool = False) -> tuple[Any, Any, str]:
    """Embed one embedder's units + questions, rank; return (ranked, unit embed seconds, embedder name).
    ``ranked`` holds the top ``max(memshot.k)`` per question, or every unit with ``full``."""
    import numpy as np
    import polars as pl

    from vismem.memory.dialogue.retrieval import embed_items, embedding_items, evidence_ranks, rank_units
    from vismem.pipelines.memshot.embed import embed_items_ray

    cfg = ctx.config.memshot
    qs = questions.filter(pl.col("conversation_id").is_in(units["conversation_id"].unique().to_list()))
    items = embedding_items(units, qs)
    on_ray = cfg.embed_on_ray if cfg.embed_on_ray is not None else items.height > 2000
    ctx.manifest.component(f"memshot.{role}", spec)
    name = embedder_label(spec)
    # Resumable: vectors already in the run's embedding cache are not recomputed (a killed run
    # re-embeds only what is missing; same config → same run prefix → same cache).
    cache_key = f"{ctx.run_prefix}/memshot/embeddings/{role}.parquet"
    cache = cached_vectors(ctx, cache_key) if ctx.store.exists(cache_key) else {}
    todo = items.filter(~pl.col("item_id").is_in(list(cache)))
    if todo.height:
        if on_ray:
            vecs, secs = embed_items_ray(todo, spec, store=ctx.store, ray_cfg=ctx.config.ray,
                                         batch_size=cfg.embed_batch_size, actors=cfg.embed_actors,
                                         num_gpus=cfg.embed_gpus)
        else:
            from vismem.core.progress import step
            from vismem.serve.build import build_embedder

            with step(f"memshot: loading {name}"):
                embedder = build_embedder(spec)
            vecs, secs = embed_items(todo, embedder, read_image=ctx.store.get_bytes, batch_size=cfg.embed_batch_size)
        cache.update({i: (v, float(t)) for i, v, t in zip(todo["item_id"].to_list(), vecs, secs)})
        ids_all = list(cache)
        # A fixed-width Array column: written from / read into one (n, d) matrix, no Python floats.
        ctx.store.write_table(cache_key, pl.DataFrame({
            "item_id": ids_all, "embedding": np.stack([cache[i][0] for i in ids_all]).astype(np.float32),
            "embed_s": np.asarray([cache[i][1] for i in ids_all], dtype=np.float64)}),
            schema_version=SUMMARY_SCHEMA_VERSION)
    ids = items["item_id"].to_list()
    vecs = np.stack([cache[i][0] for i in ids])
    secs = np.asarray([cache[i][1] for i in ids])
    vectors = dict(zip(ids, vecs))
    from vismem.core.progress import step

    with step(f"memshot: ranking {units.height:,} units for {qs.height:,} questions ({name})"):
        ranked = rank_units(units, qs, vectors, None if full else max(cfg.k))
        # Where a miss's first evidence unit sits in the whole ranking (the ranking keeps the top k
        # only): what the sample viewer says for a miss (EVIDENCE_RANKS).
        ctx.store.write_table(f"{ctx.run_prefix}/{EVIDENCE_RANKS}/{role}.parquet", evidence_ranks(units, qs, vectors),
                              schema_version=SUMMARY_SCHEMA_VERSION)
    n_units = units.height  # items are units first, then questions
    unit_secs = units.select("variant", "conversation_id").with_columns(
        pl.Series("embed_s", np.asarray(secs[:n_units], dtype=np.float64)), pl.lit(name).alias("embedder"))
    ctx.logger.info("memshot: %s embedded %d of %d items (%s)", name, todo.height, len(ids), "ray" if on_ray else "driver")
    return ranked, unit_secs, name


def max_heights(units: Any) -> dict[str, int | None]:
    """Variant → its maximum rendering height (None: full session / unbounded), from the variant
    YAML; memories of ``memshot.memories`` (not variants) have none."""
    from vismem.memory.dialogue.variants import list_variants, load_variant

    known = set(list_variants())
    return {v: load_variant(v).max_height if v in known else None for v in units["variant"].unique().to_list()}


def embedder_label(spec: dict[str, Any]) -> str:
    """How results name an embedder: the registry name, plus its label, and a stand-in mark.

    Stand-ins (tiny randomly initialised models, OCR or pocket encoders; declared by their
    factories) are marked, so no one mistakes their recall for a real model's.
    """
    from vismem.serve.registry import EMBEDDERS

    args = spec.get("args") or {}
    name = spec["name"] + (f":{args['label']}" if args.get("label") else "")
    if EMBEDDERS.is_stand_in(spec):
        name += f" (stand-in {args['path']})" if args.get("path") else " (stand-in)"
    return name
