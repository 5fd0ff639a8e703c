"""``serve-throughput``: a served VLM's prefill and decode throughput over the OpenAI API -- the
calibration ``vismem plan --calibration`` sizes GPUs from (measure once on your GPU, plan from that).

Three batches of ``batch`` requests, all sent at once, each timed from the first request to the
last reply:

* **prefill**: long prompts that share no prefix (each starts with its own nonce, so the prefix
  cache holds none of it), one reply token: prompt tokens (the server's ``usage``) / wall;
* **decode**: short prompts, ``decode_tokens`` reply tokens each (``ignore_eos``/``min_tokens``,
  vLLM's sampling extras): reply tokens / (wall - the prompts' prefill at the rate just measured),
  at a batch of ``batch`` sequences and their mean context;
* **images**: one ``image_px`` image and a short question each, one reply token: the seconds per
  image left once the prompts' tokens are paid at the prefill rate (the vision encoder).

Where: ``VISMEM_CALIBRATE_MODEL`` names a model YAML (its ``args.base_url``, ``model``,
``api_key_env``: the endpoint `vismem serve up` deployed), ``VISMEM_CALIBRATE_BATCH`` (default 32),
``VISMEM_CALIBRATE_DEVICE`` (free text recorded, e.g. H100). Without a model the benchmark measures
the loopback capacity-modelled endpoint (:mod:`vismem.serve.capacity`), whose throughput is known:
its records' targets say what it should find. A record ``calibration`` carries the entry
:func:`vismem.serve.throughput.load_calibration` reads from the ``--out`` JSON.
"""

from __future__ import annotations

import io
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vismem.bench.harness import benchmark, record
from vismem.core.errors import ConfigError

NAME = "serve-throughput"
PREFILL_WORDS, DECODE_TOKENS, IMAGE_PX = 1200, 128, 512
#: The loopback endpoint's capacity model when no model is named: a request holds one of ``batch``
#: slots for ``base_s + per_token_s x max_tokens`` (its prompt costs it nothing).
SIM_BASE_S, SIM_PER_TOKEN_S = 0.05, 0.004


def _png(px: int, i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (px, px), (37 * i % 256, 90, 200)).save(buf, "PNG")
    return buf.getvalue()


def _send(client: Any, bodies: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """All ``bodies`` at once: (seconds from the first request to the last reply, the usages)."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        t0 = time.perf_counter()
        replies = list(pool.map(lambda b: client.post("/chat/completions", b, who=NAME), bodies))
        wall = time.perf_counter() - t0
    usages = [r.get("usage") or {} for r in replies]
    if any(u.get("prompt_tokens") is None or u.get("completion_tokens") is None for u in usages):
        raise ConfigError(f"{NAME}: the endpoint's replies carry no usage (prompt/completion tokens) to time")
    return wall, usages


def _user(model: str, parts: list[dict[str, Any]] | str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": parts}], "max_tokens": max_tokens,
            "temperature": 0.0, **extra}


def measure(client: Any, model: str, *, batch: int = 32, prefill_words: int = PREFILL_WORDS,
            decode_tokens: int = DECODE_TOKENS, image_px: int = IMAGE_PX) -> dict[str, Any]:
    """The three batches against ``client`` (a :class:`vismem.serve.http_client.RetryingJSONClient`):
    ``{prefill_tokens_per_s, decode_tokens_per_s, decode_batch, decode_context, seconds_per_image}``."""
    import base64

    words = " ".join(f"shelf{i % 97} lamp chair" for i in range(prefill_words // 3))
    wall, us = _send(client, [_user(model, f"{uuid.uuid4().hex} {words}", 1) for _ in range(batch)])
    prefill_prompt = sum(u["prompt_tokens"] for u in us)
    prefill = prefill_prompt / wall
    extra = {"ignore_eos": True, "min_tokens": decode_tokens}
    wall, us = _send(client, [_user(model, f"{uuid.uuid4().hex} count the chairs", decode_tokens, **extra)
                              for _ in range(batch)])
    prompt = sum(u["prompt_tokens"] for u in us)
    done = sum(u["completion_tokens"] for u in us)
    decode = done / max(wall - prompt / prefill, wall * 0.05)
    png = base64.b64encode(_png(image_px, 0)).decode()
    bodies = [_user(model, [{"type": "text", "text": f"{uuid.uuid4().hex} what is shown?"},
                            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}], 1)
              for _ in range(batch + 1)]
    _send(client, bodies[:1])  # the first image request sets up the processor and encoder: not a per-image cost
    wall, us = _send(client, bodies[1:])
    per_image = max(0.0, wall - sum(u["prompt_tokens"] for u in us) / prefill) / batch
    return {"prefill_tokens_per_s": prefill, "prefill_context": prefill_prompt / batch / 2,
            "decode_tokens_per_s": decode, "decode_batch": batch,
            "decode_context": prompt / batch + done / batch / 2, "seconds_per_image": per_image}


def _target() -> tuple[Any, str, str]:
    """``(client, model id, variant)`` of ``VISMEM_CALIBRATE_MODEL`` (client None without one)."""
    from vismem.serve.http_client import RetryingJSONClient

    variant = os.environ.get("VISMEM_CALIBRATE_MODEL")
    if variant:
        from vismem.serve.models import load_model_spec

        args = load_model_spec(variant).args
        client = RetryingJSONClient(str(args["base_url"]), api_key_env=args.get("api_key_env"), timeout_s=600,
                                    max_concurrency=1024)
        return client, str(args.get("model") or variant), variant
    return None, "", "loopback"


class _Tokens:
    """A stand-in VLM whose reply is ``max_tokens`` tokens (the loopback endpoint's self-check)."""

    name = "calibrate:tokens"

    def chat(self, messages: Any, *, max_tokens: int = 512, temperature: float = 0.0) -> Any:
        from vismem.serve.vlm import ChatResult

        words = sum(len(m.text.split()) for m in messages)
        return ChatResult(text=" ".join(["tok"] * max_tokens), latency_s=0.0, prompt_tokens=words,
                          completion_tokens=max_tokens)


def calibration_records(cal: dict[str, Any], variant: str, device: str, *,
                        decode_expected: float | None = None) -> list[dict[str, Any]]:
    """The benchmark's records: the three figures, the decode figure's error against a known
    capacity (the loopback self-check) and a ``calibration`` record carrying the entry."""
    recs = [record(NAME, "prefill tokens/s", cal["prefill_tokens_per_s"], "tokens/s", better="higher"),
            record(NAME, f"decode tokens/s (batch {cal['decode_batch']})", cal["decode_tokens_per_s"], "tokens/s",
                   better="higher"),
            record(NAME, "seconds per image (vision)", cal["seconds_per_image"], "s")]
    if decode_expected:
        recs.append(record(NAME, "decode error vs the capacity model", abs(cal["decode_tokens_per_s"] /
                                                                            decode_expected - 1), "fraction",
                           target=0.25))
    entry = {"model": variant, "device": device, **cal,
             "source": f"vismem bench {NAME} {time.strftime('%Y-%m-%d')} ({device})"}
    return recs + [{**record(NAME, "calibration", 1.0, "entry"), "calibration": entry}]


@benchmark(NAME, "a served VLM's prefill tokens/s, decode tokens/s at a batch and vision s/image over the OpenAI "
           "API (VISMEM_CALIBRATE_MODEL; the loopback simulator without): the file vismem plan --calibration reads")
def run() -> list[dict[str, Any]]:
    batch = int(os.environ.get("VISMEM_CALIBRATE_BATCH") or 32)
    device = os.environ.get("VISMEM_CALIBRATE_DEVICE") or "unknown"
    client, model, variant = _target()
    if client is not None:
        return calibration_records(measure(client, model, batch=batch), variant, device)
    from vismem.serve.capacity import CapacityModel
    from vismem.serve.http_client import RetryingJSONClient
    from vismem.serve.openai_server import LocalOpenAIServer

    cap = CapacityModel(slots=batch, base_s=SIM_BASE_S, per_token_s=SIM_PER_TOKEN_S, tokens="max_tokens")
    with LocalOpenAIServer(vlm=_Tokens(), capacity=cap) as srv:
        client = RetryingJSONClient(srv.base_url, api_key_env=None, timeout_s=120, max_concurrency=batch)
        cal = measure(client, srv.model_id, batch=batch, decode_tokens=DECODE_TOKENS, image_px=64)
    # batch slots each hold a request for base + per_token x D seconds
    expected = batch * DECODE_TOKENS / (SIM_BASE_S + SIM_PER_TOKEN_S * DECODE_TOKENS)
    return calibration_records(cal, "loopback", "loopback simulator", decode_expected=expected)
