"""Synthetic result tables with known structure (for tests, benchmarks and report previews).

Nothing here is a result: every frame is generated from explicit success probabilities so that
tests can check tables against known answers. Architectures are named as in the paper.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import polars as pl

ARCHITECTURES = ("nomemory", "textonly", "caption", "worldmm-lite", "mma-lite", "m2a-lite", "dualmem")
#: Rough success rates used by default (DualMem best, M2A-lite runner-up, verbal baselines 0).
DEFAULT_P = {"nomemory": 0.0, "textonly": 0.0, "caption": 0.45, "worldmm-lite": 0.5, "mma-lite": 0.4,
             "m2a-lite": 0.7, "dualmem": 0.8}


def probes(*, backends: Sequence[str] = ("gemini-2.5-flash", "qwen2.5-vl-7b"), Js: Sequence[int] = (5, 10),
           chains: int = 6, products_per_session: int = 4, p: Mapping[str, float] | None = None,
           chain_sd: float = 0.1, seed: int = 0, study: str = "main", variant: str = "default",
           alpha: float | None = 0.75) -> pl.DataFrame:
    """A valid ``probes`` table: every product visited in session j < J is probed after every
    later session (reach 1..J-j), for every architecture, with per-chain random effects.

    Outcomes of one probe across architectures use one shared uniform (common random numbers),
    so better architectures dominate worse ones probe by probe.
    """
    p = dict(DEFAULT_P if p is None else p)
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {k: [] for k in ("backend", "seed", "J", "architecture", "probe_id", "visit_session",
                                             "recall_session", "reach", "bank_size", "encoding_position",
                                             "target_url", "final_url", "correct", "steps")}
    for backend in backends:
        for J in Js:
            for s in range(chains):
                effect = rng.normal(0, chain_sd)
                for v in range(1, J):
                    for prod in range(products_per_session):
                        pos = (v - 1) * products_per_session + prod
                        url = f"/product/{backend[:2]}{s:02d}{v:02d}{prod:02d}"
                        for r in range(v + 1, J + 1):
                            u = rng.random()
                            bank = r * products_per_session
                            for arch in p:
                                prob = 0.0 if p[arch] == 0 else np.clip(p[arch] + effect - 0.01 * (r - v), 0, 1)
                                ok = bool(u < prob)
                                cols["backend"].append(backend)
                                cols["seed"].append(s)
                                cols["J"].append(J)
                                cols["architecture"].append(arch)
                                cols["probe_id"].append(f"v{v}-p{prod}-r{r}")
                                cols["visit_session"].append(v)
                                cols["recall_session"].append(r)
                                cols["reach"].append(r - v)
                                cols["bank_size"].append(bank)
                                cols["encoding_position"].append(pos)
                                cols["target_url"].append(url)
                                cols["final_url"].append(url if ok else "/")
                                cols["correct"].append(ok)
                                cols["steps"].append(int(rng.integers(2, 8)))
    df = pl.DataFrame(cols, schema_overrides={"seed": pl.Int64, "J": pl.Int64})
    return df.with_columns(pl.lit(study).alias("study"), pl.lit(variant).alias("variant"),
                           pl.lit(alpha, pl.Float64).alias("alpha"))


def bernoulli_probes(n_probes: int, *, architectures: Sequence[str] = ARCHITECTURES, Js: Sequence[int] = (5, 10, 15),
                     chains: int = 25, backend: str = "gemini-2.5-flash", seed: int = 0) -> pl.DataFrame:
    """A large ``probes`` table fast (vectorised): ``n_probes`` probes per (J, architecture)."""
    rng = np.random.default_rng(seed)
    parts = []
    for J in Js:
        chain = np.sort(rng.integers(0, chains, n_probes))
        reach = rng.integers(1, J, n_probes)
        visit = rng.integers(1, J - reach + 1)
        recall = visit + reach
        bank = recall * 11 + rng.integers(0, 5, n_probes)
        u = rng.random(n_probes)
        effect = rng.normal(0, 0.1, chains)[chain]
        for arch in architectures:
            prob = np.clip(DEFAULT_P.get(arch, 0.5) + effect, 0, 1)
            parts.append(pl.DataFrame({
                "backend": backend, "seed": chain.astype(np.int64), "J": np.int64(J), "architecture": arch,
                "probe_id": np.char.add("p", np.arange(n_probes).astype(str)),
                "visit_session": visit.astype(np.int64), "recall_session": recall.astype(np.int64),
                "reach": reach.astype(np.int64), "bank_size": bank.astype(np.int64),
                "encoding_position": (visit * 11).astype(np.int64), "target_url": "/product/x", "final_url": "/product/x",
                "correct": u < prob, "steps": np.int64(3),
            }))
    return pl.concat(parts).with_columns(pl.lit("main").alias("study"), pl.lit("default").alias("variant"),
                                         pl.lit(None, pl.Float64).alias("alpha"))


def encoding(*, backends: Sequence[str] = ("gemini-2.5-flash", "qwen2.5-vl-7b"), chains: int = 6, J: int = 10,
             seed: int = 0) -> pl.DataFrame:
    """A valid ``encoding`` table."""
    rng = np.random.default_rng(seed)
    rows = []
    for b_i, backend in enumerate(backends):
        for s in range(chains):
            for j in range(1, J + 1):
                rows.append({"backend": backend, "seed": s, "j": j, "steps": int(rng.integers(22, 29)),
                             "distinct_products": int(rng.integers(2, 14) if b_i else rng.integers(9, 14)),
                             "styles": int(rng.integers(1, 5) if b_i else rng.integers(3, 5)),
                             "category": ["chair", "sofa", "lamp"][j % 3]})
    return pl.DataFrame(rows)


LOCOMO_CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")


def memshot_answers(*, variants: Mapping[str, float] | None = None, ks: Sequence[int] = (5, 10),
                    questions: int = 40, conversations: int = 3, heights: Sequence[int | None] = (None,),
                    model: str = "stand-in-vlm", seed: int = 0) -> pl.DataFrame:
    """A valid ``memshot_answers`` table (LoCoMo categories); accuracy ~ the given rates."""
    variants = dict(variants or {"memshot": 0.7, "text_rag": 0.6})
    rng = np.random.default_rng(seed)
    rows = []
    for conv in range(conversations):
        for q in range(questions):
            cat = LOCOMO_CATEGORIES[q % len(LOCOMO_CATEGORIES)]
            u = rng.random()
            for v, acc in variants.items():
                for k in ks:
                    for h in heights:
                        ok = bool(u < acc + 0.01 * k)
                        rows.append({"dataset": "locomo", "conversation_id": f"conv-{conv}", "question_id": f"q{q}",
                                     "question": f"question {q}?", "category": cat, "variant": v, "k": k,
                                     "prediction": "yes" if ok else "no", "judge_label": ok,
                                     "f1": float(ok) * 0.8, "recall_hit": ok, "answer": "yes", "model": model,
                                     "max_height": h})
    return pl.DataFrame(rows, schema_overrides={"max_height": pl.Int64})


def memshot_recall(*, variants: Sequence[str] = ("memshot", "text_rag"), ks: Sequence[int] = (1, 5, 10),
                   questions: int = 40, seed: int = 0) -> pl.DataFrame:
    """A valid ``memshot_recall`` table; recall grows with k."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        for v in variants:
            for k in ks:
                rec = float(min(1.0, rng.random() * k / 5))
                rows.append({"dataset": "locomo", "conversation_id": "conv-0", "question_id": f"q{q}",
                             "category": LOCOMO_CATEGORIES[q % 4], "variant": v, "k": k, "recall": rec,
                             "hit": rec > 0})
    return pl.DataFrame(rows)


def adaptive(*, chains: int = 3, J: int = 5, scored: int = 4, seed: int = 0) -> pl.DataFrame:
    """A valid ``adaptive`` table: the stopping rule's cells after the first ``scored`` draws of
    a synthetic exhaustive probes table (contrast DualMem vs M2A-lite)."""
    from vismem.analysis.adaptive import Rule, cell_status, units_from_probes

    units = units_from_probes(probes(Js=(J,), chains=chains, seed=seed), seed=seed, scored=scored)
    return cell_status(units, Rule(min_units=2, contrast=("dualmem", "m2a-lite"), grid=101), [J])

