"""The ``memshot`` stage: render → retrieve → recall@k → (answers → judge) → scores and latency.

1. **Render** every configured variant with the render job (:mod:`vismem.pipelines.memshot.render`):
   shots and a Parquet unit table in the store, with render seconds per conversation.
2. **Retrieve**: embed units and questions through the Embedder protocol (text units with
   ``text_embedder``, image units with ``image_embedder``), as a Ray Data actor-pool job for
   large inputs or in the driver for small ones; rank units per question within the conversation.
   A pixel reader (``ocr-minilm``) reads the shots first (OCR job, read rate per variant;
   :mod:`vismem.pipelines.memshot.steps`, with ``memshot.memories`` and Fig. 4b's retrievers).
3. **Recall@k** per question (exact, from the dia_ids each unit recorded) →
   ``results/memshot_recall.parquet`` and the benchmark-free ``results/memshot_recall_summary.parquet``.
   For LongMemEval, also its own retrieval metrics (recall_any / recall_all / NDCG@k, turn and
   session level; :mod:`vismem.pipelines.memshot.lme`) → ``results/memshot_lme_retrieval.parquet``.
4. **Construction latency** per conversation and variant (render + unit embedding) →
   ``results/memshot_latency.parquet``, beside the paper's 9.56 s.
5. When a VLM is configured: **answers**, then (with a judge) **judge labels**; token F1 always →
   ``results/memshot_answers.parquet`` and ``results/memshot_scores.parquet``.

Intermediates (resumption): ``<run>/memshot/embeddings/<role>.parquet`` (vectors per item),
``<run>/memshot/ranked.parquet`` (top-k per question), ``<run>/memshot/evidence_ranks/<role>.parquet``
(each question's first evidence unit in the whole ranking, for the sample viewer),
``<run>/memshot/answers_raw.parquet`` and
``judged_raw.parquet``. Every result table carries ``schema_version``; ``memshot_recall`` and
``memshot_answers`` are validated against :mod:`vismem.analysis.schemas`.

Top-level imports stay light (the CLI imports this module for its flags).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vismem.core.errors import ConfigError
from vismem.core.unique import json_loads_unique
from vismem.pipelines.memshot.answercache import check_dataset_file, verdict
from vismem.pipelines.memshot.answers import answer_and_score, write_result
from vismem.pipelines.memshot.retrieve import (SUMMARY_SCHEMA_VERSION, dataset_name, embedder_groups, max_heights,
                                               no_evidence_rule, retrieve_units)
from vismem.pipelines.stage import Stage, count

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext

#: The paper's MemShot memory-construction latency (Table 1), seconds per conversation.
PAPER_CONSTRUCTION_LATENCY_S = 9.56


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
                out[flag] = json_loads_unique(raw, f"--{flag}", error=ConfigError)
            except (json.JSONDecodeError, RecursionError) as err:
                raise ConfigError(f"--{flag} must be a JSON object like {{\"name\": ..., \"args\": {{...}}}}: {err}") from None
    return {"memshot": out} if out else {}


# -- the stage -------------------------------------------------------------------------------------

def check(config: "RunConfig") -> None:
    """Every component spec resolves and the dataset file exists (ConfigError naming the field)."""
    from vismem.serve.registry import EMBEDDERS, VLMS

    cfg = config.memshot
    if not cfg.enabled:
        return
    EMBEDDERS.check(cfg.text_embedder, field="memshot.text_embedder")
    if cfg.image_embedder is not None:
        EMBEDDERS.check(cfg.image_embedder, field="memshot.image_embedder")
    for i, spec in enumerate(cfg.extra_retrievers):
        EMBEDDERS.check(spec, field=f"memshot.extra_retrievers[{i}]")
    if cfg.memories:
        from vismem.memory.dialogue.memories import MEMORIES

        for i, spec in enumerate(cfg.memories):
            MEMORIES.check(spec, field=f"memshot.memories[{i}]", injected=("text_embedder", "image_embedder"))
    for name in ("vlm", "judge"):
        if getattr(cfg, name) is not None:
            VLMS.check(getattr(cfg, name), field=f"memshot.{name}")
    check_image_budgets(cfg)
    for name in ("vlm", "judge") if cfg.batch_inference == "ray-data" else ():
        spec = getattr(cfg, name)
        if spec is not None and VLMS.resolve(spec)["name"] != "openai":
            raise ConfigError(f"memshot.batch_inference: ray-data asks an OpenAI-compatible endpoint; memshot.{name} "
                              f"is {VLMS.resolve(spec)['name']!r} (use an openai spec or a served variant, or threads)")
    from vismem.pipelines.memshot.processors import check_processors

    check_processors(cfg)
    check_dataset_file(config)
    for line in answer_shortfall(config):
        logging.getLogger("vismem.memshot").warning("memshot: %s", line)


def answer_shortfall(config: "RunConfig") -> list[str]:
    """One line per deployed answering / judging model the stage cannot fill: the requests it
    keeps in flight (``request_concurrency`` on threads; ``ray.concurrency`` x the client's
    ``max_concurrency`` on ray-data, at most) are fewer than ``max_replicas`` x
    ``target_ongoing_requests``, so Serve never scales the model to its ``max_replicas``."""
    from vismem.serve.registry import fleet_of

    cfg = config.memshot
    out = []
    for name in ("vlm", "judge"):
        d = fleet_of(getattr(cfg, name))
        if d is None:
            continue
        key = getattr(getattr(cfg, name), "key", None)
        st = d.settings
        fill = int(st.max_replicas * st.target_ongoing_requests)
        if cfg.batch_inference == "ray-data":
            sent = config.ray.concurrency * int(d.client_args.get("max_concurrency") or 8)
            knob = "ray.concurrency x the client's max_concurrency"
        else:
            sent, knob = cfg.request_concurrency, "memshot.request_concurrency"
        if sent < fill:
            out.append(f"memshot.{name} {key}: {sent} requests in flight keep {sent / st.target_ongoing_requests:.1f} "
                       f"of its {st.max_replicas} replicas busy (max_replicas {st.max_replicas} x "
                       f"target_ongoing_requests {st.target_ongoing_requests:g} = {fill}): raise {knob} to {fill}")
    return out


def check_image_budgets(cfg: Any) -> None:
    """The answering model fits ``max(k)`` of each image variant's tallest shots (ConfigError naming
    the model, the variant and k otherwise): a prompt past ``max_model_len`` is a 400 that no
    retry mends. Only a named model variant (``serve/models/*.yaml``) states its context and pixel
    bounds; full-session shots have no height bound and are not checked."""
    from vismem.memory.dialogue.variants import list_variants, load_variant
    from vismem.serve.budget import check_image_budget, max_model_len
    from vismem.serve.models import list_models, load_model_spec

    if cfg.vlm is None or cfg.vlm.key not in list_models("vlm"):
        return
    ms = load_model_spec(cfg.vlm.key)
    if max_model_len(ms) is None:  # no context stated to exceed (a hosted API, a scripted stand-in)
        return
    for name in cfg.variants:
        v = load_variant(name) if name in list_variants() else None
        if v is None or not v.is_image or v.max_height is None:
            continue
        try:  # the question, the prompt and the reply are reserved beside the images
            check_image_budget(ms, (v.style.width, v.max_height), max(cfg.k), reserve=cfg.answer_max_tokens + 1024)
        except ConfigError as err:
            raise ConfigError(f"memshot.variants {name!r} with memshot.vlm: {err}") from None


def run(ctx: "RunContext") -> dict[str, Any]:
    """Run the MemShot evaluation for ``ctx.config.memshot``; returns a JSON-able summary."""
    import polars as pl

    from vismem.memory.dialogue.retrieval import evidence_recall, recall_summary
    from vismem.pipelines.memshot import steps

    cfg = ctx.config.memshot
    if not cfg.enabled:
        return {"status": "disabled"}
    results = f"{ctx.run_prefix}/results"
    units, render_s, conversations, healed = _render(ctx)
    questions = _questions(conversations, cfg)
    ctx.logger.info("memshot: %d units over %d variants, %d questions", units.height,
                    units["variant"].n_unique() if units.height else 0, questions.height)

    ranked_parts, embed_parts, embedder_names = [], [], {}
    retrieval_units, pixels = steps.pixel_text(ctx, units, conversations)
    if pixels:
        embed_parts.append(pixels.pop("seconds"))
    # LongMemEval's retrieval metrics rank the whole corpus (upstream ``run_retrieval``), so that
    # dataset keeps every unit's rank; answers and evidence recall read the top k of it.
    full = cfg.dataset == "longmemeval"
    for role, spec, group in embedder_groups(retrieval_units, cfg):
        ranked, secs, name = retrieve_units(ctx, role, spec, group, questions, full=full)
        ranked_parts.append(ranked)
        embed_parts.append(secs)
        embedder_names.update({v: name for v in group["variant"].unique().to_list()})
    if not ranked_parts:
        return {"status": "no-retrieval", "units": units.height, "reason": "no embedder for any variant"}
    ranked = pl.concat(ranked_parts)
    memories = steps.memories(ctx, conversations, questions, full=full)
    if memories:
        units = pl.concat([units, memories["units"]], how="diagonal_relaxed")
        ranked = pl.concat([ranked, memories["ranked"]])
        embed_parts.append(memories["seconds"])
        embedder_names.update(memories["embedders"])
        pixels = steps.add_readings(ctx, pixels, memories["readings"])
    whole, ranked = ranked, ranked.filter(pl.col("rank") <= max(cfg.k))
    # The ranking is an intermediate (answers and any re-scoring start from it), not a result table.
    ctx.store.write_table(f"{ctx.run_prefix}/memshot/ranked.parquet", ranked, schema_version=SUMMARY_SCHEMA_VERSION)

    # a question without evidence turns: LoCoMo's official recall scores it 1, LongMemEval leaves it out
    recall = evidence_recall(ranked, units, questions, cfg.k, no_evidence=no_evidence_rule(cfg.dataset))
    recall = recall.with_columns(
        pl.lit(dataset_name(cfg)).alias("dataset"),
        pl.col("variant").replace_strict(embedder_names, default=None).alias("embedder"),
        pl.col("variant").replace_strict(max_heights(units), default=None, return_dtype=pl.Int64).alias("max_height"),
    )
    recall = steps.with_unit_size(pl.concat([recall, steps.extra_recall(ctx, units, questions)], how="diagonal_relaxed"))
    if memories and memories["no_recall"]:  # memories not tied to dialogue turns: Acc/F1 only
        recall = recall.filter(~pl.col("variant").is_in(memories["no_recall"]))
    write_result(ctx, "memshot_recall", recall)
    summary_tbl = recall_summary(recall, by=("variant", "embedder", "k"))
    ctx.store.write_table(f"{results}/memshot_recall_summary.parquet", summary_tbl, schema_version=SUMMARY_SCHEMA_VERSION)

    from vismem.pipelines.memshot.lme import lme_retrieval

    lme = lme_retrieval(ctx, conversations, whole, units, embedder_names,
                        skip=memories["no_recall"] if memories else ())
    latency = _latency(render_s, pl.concat(embed_parts), units, dataset=dataset_name(cfg))
    ctx.store.write_table(f"{results}/memshot_latency.parquet", latency, schema_version=SUMMARY_SCHEMA_VERSION)

    summary: dict[str, Any] = {
        "status": "done", "dataset": dataset_name(cfg), "conversations": len(conversations),
        # LongMemEval repeats some haystack sessions (upstream #54): identical repeats kept once.
        "duplicate_sessions": int(getattr(conversations, "duplicate_sessions", 0)),
        "questions": questions.height, "units": units.height, "healed": healed,
        "recall": steps.recall_dict(summary_tbl),
        "construction_latency_s": steps.latency_dict(latency),
        "paper_construction_latency_s": PAPER_CONSTRUCTION_LATENCY_S,
        "rendered_not_retrieved": sorted(set(units["variant"].unique().to_list()) - set(embedder_names)),
        "results": [f"{results}/{n}.parquet" for n in
                    ("memshot_recall", "memshot_recall_summary", "memshot_latency")],
    }
    if lme is not None:  # LongMemEval's own retrieval metrics (its src/retrieval evaluation)
        summary["lme_retrieval"] = lme["recall_any"]
        summary["results"].append(lme["table"])
    if pixels:
        summary["ocr"], summary["read_rate"] = pixels["ocr"], pixels["read_rate"]
        summary["results"].append(f"{results}/memshot_readrate.parquet")
        unreadable(ctx, summary)
    if cfg.vlm is not None:
        summary["answers"] = answer_and_score(ctx, ranked, units, questions, recall, latency=latency,
                                               embedders=embedder_names)
        summary["results"] += [f"{results}/memshot_answers.parquet", f"{results}/memshot_scores.parquet"]
        verdict(summary)
    else:
        summary["answers"] = "skipped: no memshot.vlm configured"
    return summary


def unreadable(ctx: "RunContext", summary: dict[str, Any]) -> None:
    """Mark the stage partial when the pixel reader could not read shots (read rate under
    ``memshot.read_rate_floor``: a shot too tall or too dense to read is not a memory of it), with
    one line naming how many and the worst."""
    import polars as pl

    key = f"{ctx.run_prefix}/results/memshot_readrate.parquet"
    floor = ctx.config.memshot.read_rate_floor
    if not ctx.store.exists(key):
        return
    rates = ctx.store.read_table(key).filter(pl.col("n_words") > 0)
    low = rates.filter(pl.col("read_rate") < floor).sort("read_rate")
    summary["unreadable_shots"] = low.height
    if low.height:
        worst = low.row(0, named=True)
        summary["status"] = "partial"
        summary["failure"] = (f"{low.height} of {rates.height} shots read below memshot.read_rate_floor "
                              f"{floor:.0%} by the pixel reader (worst: {worst['variant']} {worst['unit_id']} at "
                              f"{worst['read_rate']:.0%}): unreadable units are no memory")


# -- steps -----------------------------------------------------------------------------------------


def _render(ctx: "RunContext") -> tuple[Any, Any, list[Any], int]:
    """Run the render job; return ``(units, render seconds per conversation x variant, conversations,
    sessions whose damaged shots were rendered again)``."""
    from vismem.pipelines.memshot.render import run_render_job

    out = run_render_job(ctx)
    return out.units, out.render_seconds, out.conversations, sum(s["healed"] for s in out.summaries.values())


def _questions(conversations: list[Any], cfg: Any) -> Any:
    import polars as pl

    from vismem.memory.dialogue.datasets import get_dataset
    from vismem.memory.dialogue.retrieval import questions_frame

    qs = questions_frame(conversations, scored_only=False)
    dataset = get_dataset(cfg.dataset)
    # A dataset may ask its questions its own way (LoCoMo's multiple-choice category 5).
    prepare = getattr(dataset, "prepare_questions", None)
    qs, excluded = prepare(qs, cfg) if prepare else (qs, tuple(cfg.exclude_categories))
    if excluded:
        qs = qs.filter(~pl.col("category").is_in(list(excluded)))
    return qs


def _latency(render_s: Any, embed_s: Any, units: Any, dataset: str = "locomo") -> Any:
    """Construction seconds per (conversation, variant): render + embedding of its units.

    ``paper_construction_s`` quotes Table 1's 9.56 only where the paper shows it: the MemShot
    row (variant ``memshot``) on LoCoMo (null elsewhere). The paper states no unit for it; it
    is read here as seconds per conversation.

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
                         pl.when((pl.col("variant") == "memshot") & pl.lit(dataset == "locomo"))
                         .then(pl.lit(PAPER_CONSTRUCTION_LATENCY_S)).otherwise(None).alias("paper_construction_s")))
    return out.sort(["variant", "conversation_id"])


def inputs(config: "RunConfig", data_dir: Path) -> dict[str, Path]:
    """The dialogue dataset's file (none while no file is named: ``check`` says so)."""
    from vismem.pipelines.memshot.render import dataset_path

    try:
        return {"memshot.dataset": dataset_path(config.memshot, data_dir)}
    except ConfigError:
        return {}


def describe(s: dict[str, Any]) -> str:
    """One line of what ran and what was reused (the end-of-run summary)."""
    ans = s.get("answers")
    if isinstance(ans, dict):
        tail = f"{count(ans.get('answers', 0))} answers ({count(ans.get('answer_failures', 0))} failed), judged"
    else:
        tail = f"answers {ans}" if ans else ""
    rr = s.get("read_rate") or {}
    read = ("; read rate " + ", ".join(f"{v} {100 * r['read_rate']:.1f} %" for v, r in rr.items()
                                       if isinstance(r, dict) and r.get("read_rate") is not None)) if rr else ""
    healed = f"; {s['healed']} damaged shot packs redone" if s.get("healed") else ""
    ocr = s.get("ocr") if isinstance(s.get("ocr"), dict) else {}
    healed += f"; {ocr['healed']} damaged OCR texts redone" if ocr.get("healed") else ""
    if isinstance(ans, dict) and ans.get("healed_tables"):
        healed += f"; {ans['healed_tables']} damaged answer/verdict tables redone"
    return (f"{count(s.get('conversations'))} conversation(s), {count(s.get('questions'))} questions, "
            f"{count(s.get('units'))} units{read}; {tail}{healed}")


STAGE = Stage(name="memshot", describe=describe, inputs=inputs, section="memshot", run=run, add_cli_args=add_cli_args,
              cli_overrides=cli_overrides, check=check)
