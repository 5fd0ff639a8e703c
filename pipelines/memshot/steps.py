"""The MemShot stage's issue-13 steps, kept apart from its core loop (``vismem.pipelines.memshot.stage``).

* :func:`pixel_text` — a pixel reader's OCR job, the read rate per variant, and the ``ocr``
  rows it embeds (MemShot recall from pixels, locally);
* :func:`extra_recall` / :func:`with_unit_size` — Fig. 4b's second retriever family and the
  unit size / modality each recall row is plotted by;
* :func:`memories` / :func:`add_readings` — DialogueMemory adapters (``memshot.memories``) beside
  the batch variants, and the read rate of the shots a pixel reader read for them;
* :func:`with_latency` — Table 1's Latency column on every answer;
* :func:`recall_dict` / :func:`latency_dict` — the stage summary's recall and latency.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vismem.pipelines.memshot.retrieve import (SUMMARY_SCHEMA_VERSION, dataset_name, embedder_label, max_heights,
                                               no_evidence_rule, retrieve_units)

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext


def pixel_text(ctx: "RunContext", units: Any, conversations: list[Any]) -> tuple[Any, dict[str, Any]]:
    """When ``image_embedder`` is a pixel reader (``ocr-minilm``): read every shot's text with the
    OCR job (cached by content hash in the store), score the read rate per variant, and return
    the units with image rows turned into ``ocr`` rows carrying that text (what the reader
    embeds). Otherwise the units unchanged and ``{}``.

    The extras: ``seconds`` (OCR seconds per unit, part of construction latency), ``ocr`` (the
    job's summary) and ``read_rate`` (per variant: word-weighted rate, worst shot, share of shots
    at the 95 % goal), also written to ``results/memshot_readrate.parquet`` (one row per shot).
    """
    import polars as pl

    from vismem.memory.dialogue.readrate import unit_readings
    from vismem.pipelines.memshot.ocr import read_shots
    from vismem.serve.embedders.ocr import is_pixel_reader
    from vismem.serve.registry import EMBEDDERS

    cfg = ctx.config.memshot
    images = units.filter(pl.col("modality") == "image")
    if cfg.image_embedder is None or images.height == 0:
        return units, {}
    spec = EMBEDDERS.resolve(cfg.image_embedder, field="memshot.image_embedder")
    if not is_pixel_reader(spec):
        return units, {}
    ocr, job = read_shots(images, spec, store=ctx.store, ray_cfg=ctx.config.ray, actors=cfg.ocr_actors,
                          use_ray=cfg.ocr_on_ray)
    ctx.logger.info("memshot: OCR of %d shots (%d read, %d cached) in %.1f s", job["shots"], job["read"],
                    job["cached"], job["wall_s"])
    from vismem.memory.dialogue.retrieval import unit_item_id

    read = images.with_columns(unit_item_id()).join(ocr, on="item_id", how="left", maintain_order="left")
    readings = unit_readings(conversations, read)
    ctx.store.write_table(f"{ctx.run_prefix}/results/memshot_readrate.parquet",
                          readings.with_columns(pl.lit(dataset_name(cfg)).alias("dataset")),
                          schema_version=SUMMARY_SCHEMA_VERSION)
    rates = _rates(readings)
    out = units.with_columns(unit_item_id()).join(ocr.select("item_id", "ocr_text"), on="item_id",
                                                  how="left", maintain_order="left")
    out = out.with_columns(
        pl.when(pl.col("ocr_text").is_not_null()).then(pl.lit("ocr")).otherwise(pl.col("modality")).alias("modality"),
        pl.coalesce(pl.col("ocr_text"), pl.col("text")).alias("text")).drop("item_id", "ocr_text")
    seconds = read.select("variant", "conversation_id", pl.col("ocr_s").alias("embed_s"),
                          pl.lit(embedder_label(spec)).alias("embedder"))
    return out, {"seconds": seconds, "ocr": job, "read_rate": rates}


def extra_recall(ctx: "RunContext", units: Any, questions: Any) -> Any:
    """Recall rows of ``memshot.extra_retrievers`` (Fig. 4b's second retriever family): each
    embeds every variant's units (text through ``embed_texts``, shots through
    ``embed_images``) and the questions; answers keep using the main retrievers."""
    import polars as pl

    from vismem.memory.dialogue.retrieval import evidence_recall
    from vismem.serve.registry import EMBEDDERS

    cfg = ctx.config.memshot
    parts = []
    for i, raw in enumerate(cfg.extra_retrievers):
        spec = EMBEDDERS.resolve(raw, field=f"memshot.extra_retrievers[{i}]")
        ranked, _secs, name = retrieve_units(ctx, f"extra_retriever_{i}", spec, units, questions)
        rule = no_evidence_rule(cfg.dataset)
        parts.append(evidence_recall(ranked, units, questions, cfg.k, no_evidence=rule).with_columns(
            pl.lit(dataset_name(cfg)).alias("dataset"), pl.lit(name).alias("embedder"),
            pl.col("variant").replace_strict(max_heights(units), default=None, return_dtype=pl.Int64)
            .alias("max_height")))
    return pl.concat(parts) if parts else pl.DataFrame()


def with_unit_size(recall: Any) -> Any:
    """Recall rows with what Fig. 4b plots them by: ``unit_size`` ("512", "768", "1024" px or
    "session" for full-session shots; null for Text RAG's session text and for w/o Header,
    which are not points of the sweep) and ``unit_modality`` ("image": drawn shots, "text": the
    same units as text)."""
    import polars as pl

    from vismem.memory.dialogue.variants import list_variants, load_variant

    known = set(list_variants())
    names = [v for v in (recall["variant"].unique().to_list() if recall.height else []) if v in known]
    vs = {v: load_variant(v) for v in names}
    # Only MemShot's own template (header on) is a point of the sweep: w/o Header is an ablation
    # at 768 px, not a unit size, and would otherwise pool with memshot.
    size = {v: (None if x.kind != "shots" or not x.header else "session" if x.max_height is None
                else str(x.max_height)) for v, x in vs.items()}
    modality = {v: "image" if x.is_image else "text" for v, x in vs.items()}
    return recall.with_columns(
        pl.col("variant").replace_strict(size, default=None, return_dtype=pl.Utf8).alias("unit_size"),
        pl.col("variant").replace_strict(modality, default=None, return_dtype=pl.Utf8).alias("unit_modality"))


def memories(ctx: "RunContext", conversations: list[Any], questions: Any, *, full: bool = False) -> dict[str, Any]:
    """Evaluate ``memshot.memories`` (DialogueMemory adapters: memocr, external systems, ...)
    beside the batch variants: ingest each conversation (timed: construction latency), store
    the shots they draw, retrieve the top-k per question (with ``full``, a memory tied to turns
    ranks every unit, as LongMemEval's retrieval metrics need). Returns units / ranked / seconds
    frames shaped like the batch path's, the embedder name per memory, and the memories whose
    units are not tied to turns (no recall), or ``{}`` when none is configured.

    Each (memory, conversation) is a unit of work cached in the run (``memory-<i>/done/``): a
    re-run neither rebuilds the memory nor re-reads its shots, and reports the latency measured
    when the unit ran."""
    import polars as pl

    from vismem.core.progress import step, track
    from vismem.serve.registry import EMBEDDERS

    cfg = ctx.config.memshot
    specs = list(cfg.memories)
    if not specs:
        return {}
    inject = {role: EMBEDDERS.resolve(getattr(cfg, role), field=f"memshot.{role}")
              for role in ("text_embedder", "image_embedder") if getattr(cfg, role) is not None}
    unit_rows, ranked_rows, secs, names, no_recall, readings = [], [], [], {}, [], []
    for i, spec in enumerate(specs):
        base = f"{ctx.run_prefix}/memshot/{dataset_name(cfg)}/memory-{i}"
        done = {c.conversation_id: ctx.store.get_json(f"{base}/done/{c.conversation_id}.json")
                for c in conversations if ctx.store.exists(f"{base}/done/{c.conversation_id}.json")}
        mem, meta = None, next(iter(done.values()), {}).get("memory")
        if len(done) < len(conversations):
            with step(f"memshot: building memory {getattr(spec, 'key', i)}"):
                mem, meta = _build_memory(spec, inject)
        ctx.manifest.component(f"memshot.memories[{i}]", meta["spec"])
        names[meta["name"]] = meta["label"]
        if not meta["scores_recall"]:
            no_recall.append(meta["name"])
        seen: set[str] = set()
        start = len(unit_rows)
        for conv in track(conversations, f"memshot: memory {meta['name']}, conversations",
                          total=len(conversations)):
            out = done.get(conv.conversation_id)
            if out is None:
                qs = questions.filter(pl.col("conversation_id") == conv.conversation_id)
                out = _memory_conversation(ctx, mem, meta, base, conv, qs,
                                           None if full and meta["scores_recall"] else max(cfg.k))
                ctx.store.put_json(f"{base}/done/{conv.conversation_id}.json", out)  # only once complete
            out = _in_column_order(out)  # a stored unit comes back with its keys sorted
            secs.append(out["seconds"])
            readings += out["readings"]
            ranked_rows += out["ranked"]
            for row in out["units"]:
                if row["unit_id"] not in seen:
                    seen.add(row["unit_id"])
                    unit_rows.append(row)
        if len(unit_rows) > start:  # beside the memory's shots, as a variant's: the sample viewer shows them
            ctx.store.write_table(f"{base}/units.parquet", _unit_frame(unit_rows[start:]),
                                  schema_version=SUMMARY_SCHEMA_VERSION)
    ctx.logger.info("memshot: %d memories, %d units", len(specs), len(unit_rows))
    return {"units": _unit_frame(unit_rows),
            "ranked": pl.DataFrame(ranked_rows, schema={"variant": pl.Utf8, "conversation_id": pl.Utf8,
                                                        "question_id": pl.Utf8, "rank": pl.Int64, "unit_id": pl.Utf8,
                                                        "score": pl.Float64}),
            "seconds": pl.DataFrame(secs), "embedders": names, "no_recall": no_recall,
            "readings": (pl.DataFrame(readings, schema={c: getattr(pl, t) for c, t in READING_SCHEMA.items()})
                         if readings else None)}


#: Column order of a cached memory unit's rows (frames are stacked by position).
_COLUMNS = {
    "seconds": ("variant", "conversation_id", "embed_s", "embedder"),
    "units": ("variant", "conversation_id", "unit_id", "dia_ids", "modality", "text", "image_key", "key",
              "session_index", "unit_index"),
    "ranked": ("variant", "conversation_id", "question_id", "rank", "unit_id", "score"),
}


def _in_column_order(out: dict[str, Any]) -> dict[str, Any]:
    order = {**_COLUMNS, "readings": tuple(READING_SCHEMA)}
    return {**out, "seconds": {c: out["seconds"][c] for c in order["seconds"]},
            **{k: [{c: r[c] for c in order[k]} for r in out[k]] for k in ("units", "ranked", "readings")}}


def _build_memory(spec: Any, inject: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The built memory and what results name it by (kept with each cached unit)."""
    from vismem.memory.dialogue.memories import build_memory

    mem = build_memory(spec, **inject)
    emb = getattr(getattr(mem, "embedder", None), "spec", None)
    raw = getattr(mem, "spec", spec)
    label = embedder_label(emb) if emb else mem.name
    if getattr(mem, "stands_in_for", None):  # e.g. dense retrieval with the run's embedder for flat-contriever
        label += f" (stand-in for {mem.stands_in_for})"
    return mem, {"name": mem.name, "label": label,
                 "scores_recall": bool(getattr(mem, "scores_recall", True)),
                 "spec": raw.raw() if hasattr(raw, "raw") else raw}


def _memory_conversation(ctx: "RunContext", mem: Any, meta: dict[str, Any], base: str, conv: Any, qs: Any,
                         k_max: int | None) -> dict[str, Any]:
    """Ingest one conversation into ``mem`` (timed), store its shots, retrieve for its questions
    (``k_max`` None: every unit): the JSON-able rows of this unit of work."""
    from vismem.pipelines.memshot.render import shot_key

    name, cid = meta["name"], conv.conversation_id
    seconds = {"variant": name, "conversation_id": cid, "embed_s": float(mem.ingest(conv)), "embedder": meta["label"]}
    built = mem.units(cid)
    k_max = k_max or max(len(built), 1)
    read = mem.ocr_texts(cid) if hasattr(mem, "ocr_texts") else []
    readings = [_reading(name, u, t) for u, t in zip(built, read) if u.image is not None]
    retrieved = {q: mem.retrieve(cid, text, k_max)
                 for q, text in zip(qs["question_id"].to_list(), qs["question"].to_list())}
    units, seen = [], set()
    for j, u in enumerate(built + [u for r in retrieved.values() for u in r]):
        if u.unit_id in seen:
            continue
        seen.add(u.unit_id)
        key = None
        if u.image is not None:
            key = shot_key(base, cid, f"s{u.session_index:03d}", j, "png")
            ctx.store.put_bytes(key, u.image, content_type="image/png")
        units.append({"variant": name, "conversation_id": cid, "unit_id": u.unit_id, "dia_ids": list(u.dia_ids),
                      "modality": u.modality, "text": u.text, "image_key": key, "key": key,
                      "session_index": u.session_index, "unit_index": j})
    ranked = [{"variant": name, "conversation_id": cid, "question_id": q, "rank": r + 1, "unit_id": u.unit_id,
               "score": None} for q, us in retrieved.items() for r, u in enumerate(us)]
    return {"memory": meta, "seconds": seconds, "units": units, "ranked": ranked, "readings": readings}


def _unit_frame(rows: list[dict[str, Any]]) -> Any:
    import polars as pl

    return pl.DataFrame(rows, schema_overrides={"dia_ids": pl.List(pl.Utf8), "image_key": pl.Utf8, "key": pl.Utf8,
                                                "session_index": pl.Int32, "unit_index": pl.Int32})


#: Columns of ``results/memshot_readrate.parquet`` (``vismem.memory.dialogue.readrate.unit_readings``).
READING_SCHEMA = {"variant": "Utf8", "conversation_id": "Utf8", "session_id": "Utf8", "unit_id": "Utf8",
                  "n_words": "Int64", "n_read": "Int64", "read_rate": "Float64", "missed": "Utf8"}


def _reading(name: str, unit: Any, ocr_text: str) -> dict[str, Any]:
    """One read-rate row for a memory's shot: the words it draws (``unit.text``) against what
    the pixel reader read from it at ingest."""
    from vismem.memory.dialogue.readrate import reading

    rd = reading(unit.text, ocr_text)
    return {"variant": name, "conversation_id": unit.conversation_id, "session_id": str(unit.session_index),
            "unit_id": unit.unit_id, "n_words": rd.n_words, "n_read": rd.n_read, "read_rate": rd.rate,
            "missed": " ".join(rd.missed[:20])}


def _rates(readings: Any) -> dict[str, dict[str, Any]]:
    """``{variant: read-rate summary}`` (floats to 4 places) for the stage summary."""
    from vismem.analysis.memshot_sections import readrate_table

    return {r.pop("variant"): {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
            for r in readrate_table(readings).iter_rows(named=True)}


def add_readings(ctx: "RunContext", pixels: dict[str, Any], readings: Any) -> dict[str, Any]:
    """Memories' shots read by a pixel reader (MemOCR's, locally) join the read rate: their rows
    are appended to ``results/memshot_readrate.parquet`` and their rate to ``read_rate``."""
    import polars as pl

    if readings is None or readings.height == 0:
        return pixels
    key = f"{ctx.run_prefix}/results/memshot_readrate.parquet"
    rows = readings.with_columns(pl.lit(dataset_name(ctx.config.memshot)).alias("dataset"))
    if pixels and ctx.store.exists(key):
        rows = pl.concat([ctx.store.read_table(key).drop("schema_version", strict=False), rows], how="diagonal_relaxed")
    ctx.store.write_table(key, rows, schema_version=SUMMARY_SCHEMA_VERSION)
    rates = _rates(readings)
    empty = {"shots": 0, "read": 0, "cached": 0, "wall_s": 0.0}
    return {**pixels, "ocr": pixels.get("ocr", empty), "read_rate": {**pixels.get("read_rate", {}), **rates}}


def with_latency(scored: Any, latency: Any) -> Any:
    """Answers with ``latency_s``: the memory-construction seconds of the answer's conversation
    and variant (render + embedding), so Table 1 shows its Latency column."""
    import polars as pl

    if latency is None or latency.height == 0:
        return scored
    lat = latency.select("conversation_id", "variant", pl.col("construction_s").alias("latency_s"))
    return scored.drop("latency_s", strict=False).join(lat, on=["conversation_id", "variant"], how="left")


def recall_dict(tbl: Any) -> dict[str, Any]:
    """Overall recall@k and hit rate per ``variant@k`` from the recall summary table."""
    import polars as pl

    out: dict[str, Any] = {}
    for r in tbl.filter(pl.col("category") == "overall").iter_rows(named=True):
        out[f"{r['variant']}@{r['k']}"] = {"recall": round(r["recall"], 4), "hit_rate": round(r["hit_rate"], 4), "n": r["n"]}
    return out


def latency_dict(lat: Any) -> dict[str, float]:
    """Mean construction seconds per conversation, per variant."""
    import polars as pl

    agg = lat.group_by("variant").agg(pl.col("construction_s").mean()).sort("variant")
    return {r["variant"]: round(r["construction_s"], 3) for r in agg.iter_rows(named=True)}
