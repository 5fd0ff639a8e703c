"""MemShot's answer step: ask the answering VLM over the retrieved units, have the judge rule,
score (Acc, both F1s) and write the answer tables -- resumable, through driver threads or Ray
Data's LLM layer (``memshot.batch_inference``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vismem.pipelines.memshot.answercache import cached, capped, save
from vismem.pipelines.memshot.retrieve import SUMMARY_SCHEMA_VERSION, dataset_name, max_heights

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext

#: The key of an answer row.
KEYS = ["variant", "k", "conversation_id", "question_id"]


def model_label(vlm: Any, spec: dict[str, Any]) -> str:
    """How results name the answering VLM: its name, ``(stand-in)`` after it when it is one (a tiny
    random model, a scripted or simulated endpoint), as the recall tables mark a stand-in embedder
    and DMV-Bench its back-ends -- so every Acc table says so, and no stand-in takes a paper number."""
    name = str(getattr(vlm, "name", None) or spec["name"])
    return f"{name} (stand-in)" if getattr(vlm, "stand_in", False) and "stand-in" not in name else name


def _answers(ctx: "RunContext", ranked: Any, units: Any, questions: Any,
             healed: list[str] | None = None) -> tuple[Any, dict[str, Any], Any]:
    """``(answers, the VLM spec, the VLM)``: earlier final answers kept, the rest asked now (a
    damaged earlier table: every answer asked again, its line appended to ``healed``)."""
    import polars as pl

    from vismem.memory.dialogue.answering import answer_tasks, generate_answers
    from vismem.serve.build import build_vlm
    from vismem.serve.registry import VLMS

    cfg = ctx.config.memshot
    tasks = answer_tasks(ranked, cfg.k)
    if cfg.max_questions:
        keep = (questions.group_by("conversation_id", maintain_order=True)
                .head(cfg.max_questions).select("conversation_id", "question_id"))
        tasks = tasks.join(keep, on=["conversation_id", "question_id"], how="semi")
    vlm_spec = VLMS.resolve(cfg.vlm, field="memshot.vlm")
    vlm = build_vlm(vlm_spec)
    ctx.manifest.component("memshot.vlm", vlm_spec)
    # Resumable: final answers (ok / malformed) of an earlier attempt are kept; only missing
    # tasks and transport errors are asked again.
    a_key = f"{ctx.run_prefix}/memshot/answers_raw.parquet"
    done = cached(ctx, a_key, pl.col("answer_status").is_in(["ok", "malformed"]), healed)
    todo = tasks.join(done.select(KEYS), on=KEYS, how="anti") if done is not None else tasks
    if cfg.batch_inference == "ray-data":
        from vismem.pipelines.memshot.batch_llm import answers_on_ray_data

        choice = _processor(ctx, "memshot.vlm", "processor", cfg.vlm, vlm_spec)
        new = capped(answers_on_ray_data(todo, units, questions, vlm_spec, dataset=dataset_name(cfg), store=ctx.store,
                                         max_tokens=cfg.answer_max_tokens, order=cfg.context_order,
                                         concurrency=ctx.config.ray.concurrency,
                                         batch_size=int(vlm_spec["args"].get("max_concurrency", 8)),
                                         choice=choice, weights=cfg.engine_weights))
    else:
        new = capped(generate_answers(todo, units, questions, vlm, dataset=dataset_name(cfg),
                                      read_image=ctx.store.get_bytes, max_tokens=cfg.answer_max_tokens,
                                      concurrency=cfg.request_concurrency, order=cfg.context_order))
    done = _with_truncated(done)
    answers = (pl.concat([done.select(new.columns), new]) if done is not None else new).sort(KEYS)
    answers = answers.join(tasks.select(KEYS), on=KEYS, how="semi")
    save(ctx, a_key, answers, schema_version=SUMMARY_SCHEMA_VERSION)
    return answers, vlm_spec, vlm


def _verdicts(ctx: "RunContext", answers: Any, questions: Any, healed: list[str] | None = None) -> Any:
    """``answers`` with the judge's verdict columns (a verdict reused only for the same prediction)."""
    import polars as pl

    from vismem.memory.dialogue.answering import judge_answers
    from vismem.memory.dialogue.datasets import get_dataset
    from vismem.pipelines.memshot.judge import judge_request
    from vismem.serve.build import build_vlm
    from vismem.serve.registry import VLMS

    cfg = ctx.config.memshot
    dataset = dataset_name(cfg)
    if cfg.judge is None:
        return answers.with_columns(pl.lit(None, pl.Boolean).alias("judge_label"),
                                    pl.lit("skipped", pl.Utf8).alias("judge_status"))
    # thinking off where the model has a switch; room for the verdict where it cannot stop
    judge_spec, judge_tokens = judge_request(
        VLMS.resolve(cfg.judge, field="memshot.judge"),
        cfg.judge_max_tokens or int(getattr(get_dataset(dataset), "judge_max_tokens", 256)))
    ctx.manifest.component("memshot.judge", judge_spec)
    judge = build_vlm(judge_spec)  # an HTTP client on ray-data (its name and stand-in flag), else the judge
    j_key = f"{ctx.run_prefix}/memshot/judged_raw.parquet"
    jdone = _with_truncated(cached(ctx, j_key, ~pl.col("judge_status").str.starts_with("error"), healed))
    if jdone is not None:  # a verdict is reused only for the very same prediction
        jdone = jdone.join(answers.select(KEYS + ["prediction"]), on=KEYS + ["prediction"], how="semi", nulls_equal=True)
    jtodo = answers.join(jdone.select(KEYS), on=KEYS, how="anti") if jdone is not None else answers
    if cfg.batch_inference == "ray-data":
        from vismem.pipelines.memshot.batch_llm import verdicts_on_ray_data

        choice = _processor(ctx, "memshot.judge", "judge_processor", cfg.judge, judge_spec)
        jnew = verdicts_on_ray_data(jtodo, questions, judge_spec, dataset=dataset, max_tokens=judge_tokens,
                                    parse=cfg.judge_parse, concurrency=ctx.config.ray.concurrency,
                                    batch_size=int(judge_spec["args"].get("max_concurrency", 8)),
                                    choice=choice, weights=cfg.engine_weights)
    else:
        jnew = judge_answers(jtodo, questions, judge, dataset=dataset, max_tokens=judge_tokens,
                             concurrency=cfg.request_concurrency, parse=cfg.judge_parse)
    judged = (pl.concat([jdone.select(jnew.columns), jnew]) if jdone is not None else jnew).sort(KEYS)
    save(ctx, j_key, judged, schema_version=SUMMARY_SCHEMA_VERSION)
    # Who judged, stand-in marked, in every row: an Acc table names its judge as it names its model.
    return judged.with_columns(pl.lit(model_label(judge, judge_spec)).alias("judge"))


def _processor(ctx: "RunContext", role: str, field: str, raw: Any, spec: dict[str, Any]) -> Any:
    """The ``ray.data.llm`` processor of one model (``memshot.<field>``), recorded in the
    manifest's ``processors`` (the stage summary repeats them)."""
    from vismem.pipelines.memshot.processors import choose_for

    cfg = ctx.config.memshot
    choice = choose_for(f"memshot.{field}", getattr(cfg, field), getattr(raw, "key", None), spec,
                        batch_inference=cfg.batch_inference)
    ctx.manifest.data.setdefault("processors", {})[role] = choice.record()
    ctx.manifest.save()
    return choice


def answer_hits(recall: Any, embedders: dict[str, str] | None) -> Any:
    """``(variant, conversation_id, question_id, k, recall_hit)`` of the retriever whose units the
    VLM was shown: recall rows of ``memshot.extra_retrievers`` (Fig. 4b's second family) share the
    other keys, and joining them too would answer every question once per retriever."""
    import polars as pl

    rows = recall
    if embedders and "embedder" in recall.columns:
        main = pl.col("variant").replace_strict(embedders, default=None, return_dtype=pl.Utf8)
        rows = recall.filter((pl.col("embedder") == main) | main.is_null())
    return rows.select("variant", "conversation_id", "question_id", "k", pl.col("hit").alias("recall_hit"))


def answer_and_score(ctx: "RunContext", ranked: Any, units: Any, questions: Any, recall: Any,
                     latency: Any = None, embedders: dict[str, str] | None = None) -> dict[str, Any]:
    """Answers, verdicts and scores of the run's questions; writes ``memshot_answers`` and
    ``memshot_scores`` and returns the stage summary's ``answers`` part."""
    import polars as pl

    from vismem.memory.dialogue.scoring import accuracy_table, score_answers
    from vismem.pipelines.memshot.steps import with_latency

    dataset = dataset_name(ctx.config.memshot)
    healed: list[str] = []  # damaged answer / verdict tables of an earlier attempt, asked again
    answers, vlm_spec, vlm = _answers(ctx, ranked, units, questions, healed)
    answers = _verdicts(ctx, answers, questions, healed)
    hits = answer_hits(recall, embedders)
    qcols = questions.select("conversation_id", "question_id", "question", "answer", "category", "category_code")
    full = (answers.join(qcols, on=["conversation_id", "question_id"], how="left")
            .join(hits, on=["variant", "conversation_id", "question_id", "k"], how="left")
            .with_columns(pl.lit(dataset).alias("dataset"), pl.lit(model_label(vlm, vlm_spec)).alias("model"),
                          pl.col("variant").replace_strict(max_heights(units), default=None,
                                                           return_dtype=pl.Int64).alias("max_height"),
                          # the retriever (stand-in marked), as the recall tables carry it
                          pl.col("variant").replace_strict(embedders or {}, default=None,
                                                           return_dtype=pl.Utf8).alias("embedder")))
    # F1 rules key on LoCoMo's numeric codes (1 multi-hop, 3 open-domain); the table shows names.
    scored = score_answers(full.rename({"category": "category_name"}).rename({"category_code": "category"}), dataset)
    scored = scored.rename({"category": "category_code"}).rename({"category_name": "category"})
    scored = with_latency(scored, latency)
    write_result(ctx, "memshot_answers", scored)
    table = accuracy_table(scored.with_columns(pl.col("judge_label").alias("correct")),
                           by=("variant", "embedder", "model", "k"))
    ctx.store.write_table(f"{ctx.run_prefix}/results/memshot_scores.parquet", table, schema_version=SUMMARY_SCHEMA_VERSION)
    overall = table.filter(pl.col("category") == "overall")
    processors = ({"processors": dict(ctx.manifest.data.get("processors") or {})}
                  if ctx.config.memshot.batch_inference == "ray-data" else {})
    return {**processors, "answers": scored.height, "healed_tables": len(healed),
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


def write_result(ctx: "RunContext", kind: str, df: Any) -> None:
    """Validated write through analysis.schemas (schema_version stamped)."""
    from vismem.analysis.schemas import write_results

    write_results(ctx.store, ctx.run_prefix, kind, df)


