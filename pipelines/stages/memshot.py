"""The ``memshot`` stage: render → retrieve → recall@k → (answers → judge) → scores and latency.

1. **Render** every configured variant with the render job (:mod:`vismem.pipelines.jobs.render`):
   shots and a Parquet unit table in the store, with render seconds per conversation.
2. **Retrieve**: embed units and questions through the Embedder protocol (text units with
   ``text_embedder``, image units with ``image_embedder``), as a Ray Data actor-pool job for
   large inputs or in the driver for small ones; rank units per question within the conversation.
   A pixel reader (``ocr-minilm``) reads the shots first (OCR job, read rate per variant;
   :mod:`vismem.pipelines.stages.memshot_steps`, with ``memshot.memories`` and Fig. 4b's retrievers).
3. **Recall@k** per question (exact, from the dia_ids each unit recorded) →
   ``results/memshot_recall.parquet`` and the benchmark-free ``results/memshot_recall_summary.parquet``.
4. **Construction latency** per conversation and variant (render + unit embedding) →
   ``results/memshot_latency.parquet``, beside the paper's 9.56 s.
5. When a VLM is configured: **answers**, then (with a judge) **judge labels**; token F1 always →
   ``results/memshot_answers.parquet`` and ``results/memshot_scores.parquet``.

Intermediates (resumption): ``<run>/memshot/embeddings/<role>.parquet`` (vectors per item),
``<run>/memshot/ranked.parquet`` (top-k per question), ``<run>/memshot/answers_raw.parquet`` and
``judged_raw.parquet``. Every result table carries ``schema_version``; ``memshot_recall`` and
``memshot_answers`` are validated against :mod:`vismem.analysis.schemas`.

Top-level imports stay light (the CLI imports this module for its flags).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from vismem.pipelines.answercache import cached, capped, check_dataset_file, verdict
from vismem.pipelines.stages import Stage

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext

#: The paper's MemShot memory-construction latency (Table 1), seconds per conversation.
PAPER_CONSTRUCTION_LATENCY_S = 9.56
SUMMARY_SCHEMA_VERSION = 1


# -- CLI hooks -------------------------------------------------------------------------------------

def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """``vismem run memshot --dataset locomo --variant memshot --variant text-rag --k 5 --k 10``."""
    g = parser.add_argument_group("memshot")
    g.add_argument("--dataset", metavar="NAME", help="memshot: dialogue benchmark (locomo, longmemeval; "
                   "vismem.memory.dialogue.datasets)")
    g.add_argument("--variant", action="append", metavar="NAME",
                   help="memshot: unit variant to evaluate (repeatable; see memory/dialogue/variants/)")
    g.add_argument("--k", action="append", type=int, metavar="K", help="memshot: top-k cut-off (repeatable)")
    g.add_argument("--vlm", metavar="JSON", help='memshot: answering VLM spec, e.g. \'{"name":"openai","args":{...}}\'')
    g.add_argument("--judge", metavar="JSON", help="memshot: judge spec (same form as --vlm)")


def cli_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Nested overrides from the flags above (only those given)."""
    from vismem.core.errors import ConfigError

    out: dict[str, Any] = {}
    if getattr(args, "dataset", None):
        out["dataset"] = args.dataset
    if getattr(args, "variant", None):
        out["variants"] = list(args.variant)
    if getattr(args, "k", None):
        out["k"] = list(args.k)
    for flag in ("vlm", "judge"):
        raw = getattr(args, flag, None)
        if raw:
            try:
                out[flag] = json.loads(raw)
            except json.JSONDecodeError as err:
                raise ConfigError(f"--{flag} must be a JSON object like {{\"name\": ..., \"args\": {{...}}}}: {err}") from None
    return {"memshot": out} if out else {}


# -- the stage -------------------------------------------------------------------------------------

def check(config: Any) -> None:
    """Every component spec resolves and the dataset file exists (ConfigError naming the field)."""
    from vismem.serve.registry import EMBEDDERS, VLMS

    cfg = config.memshot
    if not cfg.enabled:
        return
    EMBEDDERS.check(cfg.text_embedder, field="memshot.text_embedder")
    if cfg.image_embedder is not None:
        EMBEDDERS.check(cfg.image_embedder, field="memshot.image_embedder")
    for i, spec in enumerate(getattr(cfg, "extra_retrievers", ()) or ()):
        EMBEDDERS.check(spec, field=f"memshot.extra_retrievers[{i}]")
    if cfg.memories:
        from vismem.memory.dialogue.memories import MEMORIES

        for i, spec in enumerate(cfg.memories):
            MEMORIES.check(spec, field=f"memshot.memories[{i}]", injected=("text_embedder", "image_embedder"))
    for name in ("vlm", "judge"):
        if getattr(cfg, name) is not None:
            VLMS.check(getattr(cfg, name), field=f"memshot.{name}")
    check_dataset_file(config)


def run(ctx: "RunContext") -> dict[str, Any]:
    """Run the MemShot evaluation for ``ctx.config.memshot``; returns a JSON-able summary."""
    import polars as pl

    from vismem.memory.dialogue.retrieval import evidence_recall, recall_summary
    from vismem.pipelines.stages import memshot_steps as steps

    cfg = ctx.config.memshot
    if not cfg.enabled:
        return {"status": "disabled"}
    results = f"{ctx.run_prefix}/results"
    units, render_s, conversations = _render(ctx)
    questions = _questions(conversations, cfg)
    ctx.logger.info("memshot: %d units over %d variants, %d questions", units.height,
                    units["variant"].n_unique() if units.height else 0, questions.height)

    ranked_parts, embed_parts, embedder_names = [], [], {}
    retrieval_units, pixels = steps.pixel_text(ctx, units, conversations)
    if pixels:
        embed_parts.append(pixels.pop("seconds"))
    for role, spec, group in _embedder_groups(retrieval_units, cfg):
        ranked, secs, name = _retrieve(ctx, role, spec, group, questions)
        ranked_parts.append(ranked)
        embed_parts.append(secs)
        embedder_names.update({v: name for v in group["variant"].unique().to_list()})
    if not ranked_parts:
        return {"status": "no-retrieval", "units": units.height, "reason": "no embedder for any variant"}
    ranked = pl.concat(ranked_parts)
    memories = steps.memories(ctx, conversations, questions)
    if memories:
        units = pl.concat([units, memories["units"]], how="diagonal_relaxed")
        ranked = pl.concat([ranked, memories["ranked"]])
        embed_parts.append(memories["seconds"])
        embedder_names.update(memories["embedders"])
        pixels = steps.add_readings(ctx, pixels, memories["readings"])
    # The ranking is an intermediate (answers and any re-scoring start from it), not a result table.
    ctx.store.write_table(f"{ctx.run_prefix}/memshot/ranked.parquet", ranked, schema_version=SUMMARY_SCHEMA_VERSION)

    recall = evidence_recall(ranked, units, questions, cfg.k)
    recall = recall.with_columns(
        pl.lit(_dataset(cfg)).alias("dataset"),
        pl.col("variant").replace_strict(embedder_names, default=None).alias("embedder"),
        pl.col("variant").replace_strict(_max_heights(units), default=None, return_dtype=pl.Int64).alias("max_height"),
    )
    recall = steps.with_unit_size(pl.concat([recall, steps.extra_recall(ctx, units, questions)], how="diagonal_relaxed"))
    if memories and memories["no_recall"]:  # memories not tied to dialogue turns: Acc/F1 only
        recall = recall.filter(~pl.col("variant").is_in(memories["no_recall"]))
    _write_result(ctx, "memshot_recall", recall)
    summary_tbl = recall_summary(recall, by=("variant", "embedder", "k"))
    ctx.store.write_table(f"{results}/memshot_recall_summary.parquet", summary_tbl, schema_version=SUMMARY_SCHEMA_VERSION)

    latency = _latency(render_s, pl.concat(embed_parts), units)
    ctx.store.write_table(f"{results}/memshot_latency.parquet", latency, schema_version=SUMMARY_SCHEMA_VERSION)

    summary: dict[str, Any] = {
        "status": "done", "dataset": _dataset(cfg), "conversations": len(conversations),
        "questions": questions.height, "units": units.height,
        "recall": steps.recall_dict(summary_tbl),
        "construction_latency_s": steps.latency_dict(latency),
        "paper_construction_latency_s": PAPER_CONSTRUCTION_LATENCY_S,
        "rendered_not_retrieved": sorted(set(units["variant"].unique().to_list()) - set(embedder_names)),
        "results": [f"{results}/{n}.parquet" for n in
                    ("memshot_recall", "memshot_recall_summary", "memshot_latency")],
    }
    if pixels:
        summary["ocr"], summary["read_rate"] = pixels["ocr"], pixels["read_rate"]
        summary["results"].append(f"{results}/memshot_readrate.parquet")
    if cfg.vlm is not None:
        summary["answers"] = _answer_and_score(ctx, ranked, units, questions, recall, latency=latency)
        summary["results"] += [f"{results}/memshot_answers.parquet", f"{results}/memshot_scores.parquet"]
        verdict(summary)
    else:
        summary["answers"] = "skipped: no memshot.vlm configured"
    return summary


# -- steps -----------------------------------------------------------------------------------------

def _dataset(cfg: Any) -> str:
    return getattr(cfg, "dataset", "locomo")


def _render(ctx: Any) -> tuple[Any, Any, list[Any]]:
    """Run the render job; return ``(units, render seconds per conversation x variant, conversations)``."""
    from vismem.pipelines.jobs.render import run_render_job

    out = run_render_job(ctx)
    return out.units, out.render_seconds, out.conversations


def _questions(conversations: list[Any], cfg: Any) -> Any:
    import polars as pl

    from vismem.memory.dialogue.retrieval import questions_frame

    qs = questions_frame(conversations, scored_only=False)
    excluded = list(cfg.exclude_categories)
    if _dataset(cfg) == "locomo" and getattr(cfg, "locomo_adversarial", "exclude") == "multiple-choice":
        from vismem.pipelines.stages.memshot_steps import adversarial_choices

        qs, excluded = adversarial_choices(qs), [c for c in excluded if c != "adversarial"]
    if excluded:
        qs = qs.filter(~pl.col("category").is_in(excluded))
    return qs


def _embedder_groups(units: Any, cfg: Any):
    """``(role, spec, units)`` per embedder: text units → text_embedder, image units → image_embedder."""
    import polars as pl

    from vismem.serve.registry import EMBEDDERS

    # A pixel reader's shots arrive as "ocr" rows (their text read from pixels): still image units.
    for role, modality, spec in (("text_embedder", ("text",), cfg.text_embedder),
                                 ("image_embedder", ("image", "ocr"), cfg.image_embedder)):
        group = units.filter(pl.col("modality").is_in(list(modality)))
        if group.height and spec is not None:
            yield role, EMBEDDERS.resolve(spec, field=f"memshot.{role}"), group


def _retrieve(ctx: Any, role: str, spec: dict[str, Any], units: Any, questions: Any) -> tuple[Any, Any, str]:
    """Embed one embedder's units + questions, rank; return (ranked, unit embed seconds, embedder name)."""
    import numpy as np
    import polars as pl

    from vismem.memory.dialogue.retrieval import embed_items, embedding_items, rank_units
    from vismem.pipelines.jobs.embed import embed_items_ray

    cfg = ctx.config.memshot
    qs = questions.filter(pl.col("conversation_id").is_in(units["conversation_id"].unique().to_list()))
    items = embedding_items(units, qs)
    on_ray = cfg.embed_on_ray if cfg.embed_on_ray is not None else items.height > 2000
    ctx.manifest.component(f"memshot.{role}", spec)
    name = embedder_label(spec)
    # Resumable: vectors already in the run's embedding cache are not recomputed (a killed run
    # re-embeds only what is missing; same config → same run prefix → same cache).
    cache_key = f"{ctx.run_prefix}/memshot/embeddings/{role}.parquet"
    cache: dict[str, tuple[np.ndarray, float]] = {}
    if ctx.store.exists(cache_key):
        old = ctx.store.read_table(cache_key)
        mat = np.asarray(old["embedding"].to_numpy(), dtype=np.float32)
        cache = {i: (mat[j], float(t)) for j, (i, t) in enumerate(zip(old["item_id"].to_list(), old["embed_s"].to_list()))}
    todo = items.filter(~pl.col("item_id").is_in(list(cache)))
    if todo.height:
        if on_ray:
            vecs, secs = embed_items_ray(todo, spec, store=ctx.store, ray_cfg=ctx.config.ray,
                                         batch_size=cfg.embed_batch_size, actors=cfg.embed_actors,
                                         num_gpus=cfg.embed_gpus)
        else:
            from vismem.serve.build import build_embedder

            vecs, secs = embed_items(todo, build_embedder(spec), read_image=ctx.store.get_bytes,
                                     batch_size=cfg.embed_batch_size)
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
    ranked = rank_units(units, qs, dict(zip(ids, vecs)), max(cfg.k))
    n_units = units.height  # items are units first, then questions
    unit_secs = units.select("variant", "conversation_id").with_columns(
        pl.Series("embed_s", np.asarray(secs[:n_units], dtype=np.float64)), pl.lit(name).alias("embedder"))
    ctx.logger.info("memshot: %s embedded %d of %d items (%s)", name, todo.height, len(ids), "ray" if on_ray else "driver")
    return ranked, unit_secs, name


def _max_heights(units: Any) -> dict[str, int | None]:
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


def _latency(render_s: Any, embed_s: Any, units: Any) -> Any:
    """Construction seconds per (conversation, variant): render + embedding of its units.

    Variants without an embedder (image units when ``image_embedder`` is None) have a null
    ``embedder`` and count render time only.
    """
    import polars as pl

    emb = embed_s.group_by(["conversation_id", "variant"]).agg(pl.col("embed_s").sum(), pl.col("embedder").first())
    n_units = units.group_by(["conversation_id", "variant"]).agg(pl.len().cast(pl.Int64).alias("units"))
    out = (render_s.join(emb, on=["conversation_id", "variant"], how="full", coalesce=True)
           .join(n_units, on=["conversation_id", "variant"], how="left")
           .with_columns(pl.col("render_s").fill_null(0.0), pl.col("embed_s").fill_null(0.0))
           .with_columns((pl.col("render_s") + pl.col("embed_s")).alias("construction_s"),
                         pl.lit(PAPER_CONSTRUCTION_LATENCY_S).alias("paper_construction_s")))
    return out.sort(["variant", "conversation_id"])


def _answer_and_score(ctx: Any, ranked: Any, units: Any, questions: Any, recall: Any,
                      latency: Any = None) -> dict[str, Any]:
    import polars as pl

    from vismem.memory.dialogue.answering import answer_tasks, generate_answers, judge_answers
    from vismem.memory.dialogue.scoring import accuracy_table, score_answers
    from vismem.serve.build import build_vlm

    cfg = ctx.config.memshot
    dataset = _dataset(cfg)
    tasks = answer_tasks(ranked, cfg.k)
    if cfg.max_questions:
        keep = (questions.group_by("conversation_id", maintain_order=True)
                .head(cfg.max_questions).select("conversation_id", "question_id"))
        tasks = tasks.join(keep, on=["conversation_id", "question_id"], how="semi")
    from vismem.serve.registry import VLMS

    vlm_spec = VLMS.resolve(cfg.vlm, field="memshot.vlm")
    vlm = build_vlm(vlm_spec)
    ctx.manifest.component("memshot.vlm", vlm_spec)
    keys = ["variant", "k", "conversation_id", "question_id"]
    # Resumable: final answers (ok / malformed) of an earlier attempt are kept; only missing
    # tasks and transport errors are asked again.
    a_key = f"{ctx.run_prefix}/memshot/answers_raw.parquet"
    done = cached(ctx, a_key, pl.col("answer_status").is_in(["ok", "malformed"]))
    todo = tasks.join(done.select(keys), on=keys, how="anti") if done is not None else tasks
    new = capped(generate_answers(todo, units, questions, vlm, dataset=dataset, read_image=ctx.store.get_bytes,
                                   max_tokens=cfg.answer_max_tokens, concurrency=cfg.request_concurrency,
                                   order=cfg.context_order))
    done = _with_truncated(done)
    answers = (pl.concat([done.select(new.columns), new]) if done is not None else new).sort(keys)
    answers = answers.join(tasks.select(keys), on=keys, how="semi")
    ctx.store.write_table(a_key, answers, schema_version=SUMMARY_SCHEMA_VERSION)
    if cfg.judge is not None:
        judge_spec = VLMS.resolve(cfg.judge, field="memshot.judge")
        ctx.manifest.component("memshot.judge", judge_spec)
        j_key = f"{ctx.run_prefix}/memshot/judged_raw.parquet"
        jdone = cached(ctx, j_key, ~pl.col("judge_status").str.starts_with("error"))
        jdone = _with_truncated(jdone)
        if jdone is not None:  # a verdict is reused only for the very same prediction
            jdone = jdone.join(answers.select(keys + ["prediction"]), on=keys + ["prediction"], how="semi", nulls_equal=True)
        jtodo = answers.join(jdone.select(keys), on=keys, how="anti") if jdone is not None else answers
        jnew = judge_answers(jtodo, questions, build_vlm(judge_spec), dataset=dataset,
                             max_tokens=cfg.judge_max_tokens, concurrency=cfg.request_concurrency,
                             parse=cfg.judge_parse)
        answers = (pl.concat([jdone.select(jnew.columns), jnew]) if jdone is not None else jnew).sort(keys)
        ctx.store.write_table(j_key, answers, schema_version=SUMMARY_SCHEMA_VERSION)
    else:
        answers = answers.with_columns(pl.lit(None, pl.Boolean).alias("judge_label"),
                                       pl.lit("skipped", pl.Utf8).alias("judge_status"))
    hits = recall.select("variant", "conversation_id", "question_id", "k", pl.col("hit").alias("recall_hit"))
    qcols = questions.select("conversation_id", "question_id", "question", "answer", "category", "category_code")
    full = (answers.join(qcols, on=["conversation_id", "question_id"], how="left")
            .join(hits, on=["variant", "conversation_id", "question_id", "k"], how="left")
            .with_columns(pl.lit(dataset).alias("dataset"), pl.lit(getattr(vlm, "name", vlm_spec["name"])).alias("model"),
                          pl.col("variant").replace_strict(_max_heights(units), default=None,
                                                           return_dtype=pl.Int64).alias("max_height")))
    # F1 rules key on LoCoMo's numeric codes (1 multi-hop, 3 open-domain); the table shows names.
    scored = score_answers(full.rename({"category": "category_name"}).rename({"category_code": "category"}), dataset)
    scored = scored.rename({"category": "category_code"}).rename({"category_name": "category"})
    from vismem.pipelines.stages.memshot_steps import with_latency

    scored = with_latency(scored, latency)
    _write_result(ctx, "memshot_answers", scored)
    table = accuracy_table(scored.with_columns(pl.col("judge_label").alias("correct")), by=("variant", "model", "k"))
    ctx.store.write_table(f"{ctx.run_prefix}/results/memshot_scores.parquet", table, schema_version=SUMMARY_SCHEMA_VERSION)
    overall = table.filter(pl.col("category") == "overall")
    return {"answers": scored.height,
            "answer_failures": int((scored["answer_status"] != "ok").sum()),
            # Calls that failed (transport, unreadable input): never reused, retried by a re-run.
            "answer_errors": int(scored["answer_status"].str.starts_with("error").sum()),
            "judge_errors": int(scored["judge_status"].str.starts_with("error").sum()),
            "judge_failures": int(scored["judge_status"].is_in(["malformed", "ambiguous", "empty"]).sum()
                                  + scored["judge_status"].str.starts_with("error").sum()),
            "overall": {f"{r['variant']}@{r['k']}": {"accuracy": r["accuracy"], "f1": r["f1"], "f1_mem0": r["f1_mem0"]}
                        for r in overall.iter_rows(named=True)}}


def _with_truncated(df: Any) -> Any:
    """Cached answers or verdicts written before the answer cap existed: none was truncated."""
    import polars as pl

    if df is None or "answer_truncated" in df.columns:
        return df
    return df.with_columns(pl.lit(False).alias("answer_truncated"))


def _write_result(ctx: Any, kind: str, df: Any) -> None:
    """Validated write through analysis.schemas (schema_version stamped)."""
    from vismem.analysis.schemas import write_results

    write_results(ctx.store, ctx.run_prefix, kind, df)


STAGE = Stage(name="memshot", section="memshot", run=run, add_cli_args=add_cli_args,
              cli_overrides=cli_overrides, check=check)
