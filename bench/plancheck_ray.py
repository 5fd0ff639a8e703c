"""``plan-check-ray-data-llm``: ``vismem plan``'s token model against the real vLLM CPU engine run
as the memshot stage runs its in-job engines -- through ``ray.data.llm``'s vLLM engine processor
on a local Ray, built by the stage's own :func:`vismem.pipelines.memshot.processors.engine_processor_config`
for the tiny Qwen2.5-VL variant.

1. **calibrate** an in-process engine of the same checkpoint as ``plan-check-vllm-cpu`` does
   (:func:`vismem.bench.plancheck.calibrate`), then end it;
2. **run** ``BATCHES`` x ``BATCH`` MemShot-like answers (``K`` images and a question each, a
   ``REPLY``-token answer) through the processor, one batch in the engine at a time
   (``max_concurrent_batches: 1``): the engine's wall is the sum over batches of the longest
   ``time_taken_llm`` of each (Ray's per-row figure: request to reply inside the engine stage).
   The engine's start and Ray Data's own stages (chat template, tokenize, image preparation) are
   not in it: the plan sizes engines, and a job's start-up is paid once whatever its size;
3. **predict** the same batches with :func:`vismem.bench.plancheck.predict` (``BATCH`` in flight on
   one replica) and record predicted, measured and the error (target +-25 %).

Runs only where vLLM imports (``.venv-engine/bin/vismem bench plan-check-ray-data-llm``).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from vismem.bench.harness import benchmark, record

NAME = "plan-check-ray-data-llm"
MODEL = "tiny-qwen2.5-vl-vllm"
BATCHES = 4


def engine_env() -> None:
    """The tiny variant's engine environment (its YAML's ``deploy.env_vars``) in this process."""
    from vismem.serve.models import load_model_spec

    for k, v in (load_model_spec(MODEL).deploy or {}).get("env_vars", {}).items():
        os.environ.setdefault(k, str(v))


def calibrated() -> Any:
    """Step 1: the in-process engine's :class:`~vismem.serve.throughput.Calibration`, engine ended."""
    import gc

    from vismem.bench.plancheck import ENGINE, calibrate, chat, user
    from vismem.serve.build import build_vlm

    vlm = build_vlm({"name": "vllm", "args": {"path": "tiny:qwen2.5-vl", "engine_kwargs": ENGINE}})
    chat(vlm.llm, [user("warm up")], 1)
    cal = calibrate(vlm.llm)
    del vlm
    gc.collect()
    return cal


def measure_batches() -> tuple[float, float, int]:
    """Step 2: (engine seconds, mean prompt tokens, batches) of the answers through the processor."""
    import polars as pl
    import ray
    from ray.data.llm import build_processor

    from vismem.bench.plancheck import BATCH, REPLY, answers
    from vismem.pipelines.memshot.processors import cpu_map_kwargs, engine_processor_config, parts_content

    rows = [{"messages": parts_content(m)} for _ in range(BATCHES) for m in answers()]
    cfg = engine_processor_config(MODEL, batch_size=BATCH).model_copy(update={"max_concurrent_batches": 1})

    def pre(row: dict[str, Any]) -> dict[str, Any]:
        return {"messages": row["messages"],
                "sampling_params": {"max_tokens": REPLY, "temperature": 0.0, "ignore_eos": True}}

    def post(row: dict[str, Any]) -> dict[str, Any]:
        return {"batch": row["batch_uuid"], "engine_s": float(row["time_taken_llm"]),
                "prompt_tokens": int(row["num_input_tokens"])}

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        proc = build_processor(cfg, preprocess=pre, postprocess=post, **cpu_map_kwargs(MODEL))
        out = pl.DataFrame(proc(ray.data.from_items(rows)).take_all())
    finally:
        ray.shutdown()
    if out.height != len(rows) or (out["engine_s"] < 0).any():
        raise RuntimeError(f"{NAME}: {out.height} of {len(rows)} rows came back, or some failed")
    per_batch = out.group_by("batch").agg(pl.col("engine_s").max())
    return float(per_batch["engine_s"].sum()), float(out["prompt_tokens"].mean()), per_batch.height


def check() -> list[dict[str, Any]]:
    """Steps 1-3 of the module doc, as records."""
    from vismem.bench.plancheck import TOLERANCE, predict, tiny_facts
    from vismem.serve.testing import resolve_model_path

    engine_env()
    cal = calibrated()
    measured, prompt, batches = measure_batches()
    planned = batches * predict(tiny_facts(resolve_model_path("tiny:qwen2.5-vl")), cal, prompt)
    return [record(NAME, "calibrated prefill tokens/s", cal.prefill_tokens_per_s, "tokens/s", better="higher"),
            record(NAME, "calibrated decode tokens/s", cal.decode_tokens_per_s, "tokens/s", better="higher"),
            record(NAME, "batches through the processor", batches, "batches"),
            record(NAME, "answers: measured engine wall", measured, "s"),
            record(NAME, "answers: planned engine wall", planned, "s"),
            record(NAME, "answers: plan error", abs(planned / measured - 1), "fraction", target=TOLERANCE)]


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "vismem plan's token model calibrated on the real vLLM CPU engine against MemShot-like "
               "answers through ray.data.llm's engine processor (the stage's own config; needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return check()
