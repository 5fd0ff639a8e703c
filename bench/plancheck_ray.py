"""``plan-check-ray-data-llm``: ``vismem plan``'s token model against the real vLLM CPU engine run
as the memshot stage runs its in-job engines -- through ``ray.data.llm``'s vLLM engine processor
on a local Ray, built by the stage's own :func:`vismem.pipelines.memshot.processors.engine_processor_config`
for the tiny Qwen2.5-VL variant.

One dataset goes through the processor, one batch of ``BATCH`` rows of one kind in the engine at
a time (``max_concurrent_batches: 1``, a block per batch); a batch's engine seconds are the
longest ``time_taken_llm`` of its rows (Ray's per-row figure, request to reply inside the engine
stage: the engine's start and Ray Data's own stages -- chat template, tokenize, image preparation
-- are not in it; the plan sizes engines, and a job's start is paid once whatever its size).

1. **calibrate** through the same path, as a user would calibrate in-job engines, with the batch
   kinds of :func:`vismem.bench.plancheck.kinds` (short and long prompts with one reply token,
   ``DECODE_TOKENS`` replies, one and ``MULTI`` images each):
   :func:`vismem.bench.plancheck.calibration_from`;
2. **measure** batches of MemShot-like answers (``K`` images and a question each, a
   ``REPLY``-token answer): a batch's engine seconds;
3. **predict** one with :func:`vismem.bench.plancheck.predict` (``BATCH`` in flight on one
   replica) on that calibration and record predicted, measured and the error (target +-25 %).

One untimed batch of each kind goes first, then ``REPEATS`` rounds of one batch of each kind
(calibration and answers interleaved); each figure is the median of its kind's batches.

Runs only where vLLM imports (``.venv-engine/bin/vismem bench plan-check-ray-data-llm``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

from vismem.bench.harness import benchmark, record
from vismem.bench.plancheck import BATCH, MODEL, engine_env

NAME = "plan-check-ray-data-llm"

def workload() -> list[dict[str, Any]]:
    """Every row of the run, in batches of ``BATCH`` of one kind each: one untimed batch of each kind
    (``warm-``: kernels built, the image processor set up), then ``REPEATS`` rounds of one batch of
    each calibration kind and one of answers (see :func:`vismem.bench.plancheck.timed_runs`)."""
    from vismem.bench.plancheck import REPEATS, kinds
    from vismem.pipelines.memshot.processors import parts_content

    def rows(kind: str, convs: list[Any], tokens: int) -> list[dict[str, Any]]:
        return [{"kind": kind, "messages": parts_content(c), "max_tokens": tokens} for c in convs]

    out: list[dict[str, Any]] = []
    for kind, (make, tokens) in kinds().items():
        out += rows(f"warm-{kind}", make(), tokens)
    for _ in range(REPEATS):
        for kind, (make, tokens) in kinds().items():
            out += rows(kind, make(), tokens)
    return out


def through_processor(rows: list[dict[str, Any]]) -> Any:
    """Each batch of ``rows`` through the engine processor, one batch in the engine at a time:
    a frame of ``kind``, ``seconds`` (the longest ``time_taken_llm`` of the batch), ``prompt`` and
    ``done`` tokens per batch."""
    import polars as pl
    import ray
    from ray.data.llm import build_processor

    from vismem.pipelines.memshot.processors import cpu_map_kwargs, engine_processor_config

    cfg = engine_processor_config(MODEL, batch_size=BATCH).model_copy(update={"max_concurrent_batches": 1})

    def pre(row: dict[str, Any]) -> dict[str, Any]:
        return {"kind": row["kind"], "messages": row["messages"],
                "sampling_params": {"max_tokens": row["max_tokens"], "temperature": 0.0, "ignore_eos": True}}

    def post(row: dict[str, Any]) -> dict[str, Any]:
        return {"kind": row["kind"], "batch": row["batch_uuid"], "seconds": float(row["time_taken_llm"]),
                "prompt": int(row["num_input_tokens"]), "done": int(row["num_generated_tokens"])}

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        proc = build_processor(cfg, preprocess=pre, postprocess=post, **cpu_map_kwargs(MODEL))
        # one block a batch: a batch never mixes two kinds
        ds = ray.data.from_items(rows, override_num_blocks=len(rows) // BATCH)
        out = pl.DataFrame(proc(ds).take_all())
    finally:
        ray.shutdown()
    if out.height != len(rows) or (out["seconds"] < 0).any():
        raise RuntimeError(f"{NAME}: {out.height} of {len(rows)} rows came back, or some failed")
    batches = out.group_by("batch").agg(pl.col("kind").n_unique().alias("kinds"), pl.col("kind").first(),
                                        pl.col("seconds").max(), pl.col("prompt").sum(), pl.col("done").sum())
    if (batches["kinds"] > 1).any():
        raise RuntimeError(f"{NAME}: a batch mixed workloads; the per-batch timings would not mean anything")
    return batches


def runs_of(batches: Any) -> dict[str, list[tuple[float, int, int]]]:
    """``kind -> [(seconds, prompt tokens, reply tokens)]`` of the batches, by kind."""
    runs: dict[str, list[tuple[float, int, int]]] = {}
    for b in batches.to_dicts():
        runs.setdefault(b["kind"], []).append((b["seconds"], b["prompt"], b["done"]))
    return runs


def check() -> list[dict[str, Any]]:
    """Steps 1-3 of the module doc, as records."""
    from vismem.bench.plancheck import answers_checked

    engine_env()
    runs = runs_of(through_processor(workload()))
    return [*answers_checked(NAME, runs, f"{NAME} through the processor", "answers: engine "),
            record(NAME, "answer batches through the processor", len(runs["answers"]), "batches")]


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "vismem plan's token model calibrated on the real vLLM CPU engine against MemShot-like "
               "answers through ray.data.llm's engine processor (the stage's own config; needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return check()
