"""``serve-throughput``: a served VLM's throughput over the OpenAI API -- the calibration
``vismem plan --calibration`` sizes GPUs from (measure once on your GPU, plan from that).

Five kinds of run, each a batch of ``batch`` requests sent at once and timed from the first
request to the last reply (prompt and reply tokens from the server's ``usage``):

* **short**: a nonce and a question, one reply token;
* **prefill**: ``prefill_words`` of text behind a nonce (no request shares a prefix with another,
  so the prefix cache holds none of it), one reply token;
* **decode**: ``decode_tokens`` reply tokens each (``ignore_eos``/``min_tokens``, vLLM's sampling
  extras) to prompts of ``decode_words`` (default: a short question; set it to the workload's
  prompt length to measure the steps at the workload's context);
* **image** / **multi**: one and ``multi`` ``image_px`` images and a short question each, one
  reply token.

:func:`solve` reads the engine's costs off them as the engine spends a run's wall: ``batch x``
seconds per request + prompt tokens / prefill rate (+ images x seconds per image, + decode
steps). Short and long prompts give the prefill rate and the per-request cost (their difference
is tokens only), the decode run's wall beyond those the decode tokens/s at ``batch`` sequences,
the one- and ``multi``-image runs the seconds per image and the extra seconds of a request that
carries images. Every kind runs once untimed (the first of a shape builds kernels, the first
image sets up the processor), then ``rounds`` rounds of one run of each kind; each figure is the
median of its kind. No image or prompt repeats between runs, rounds or kinds
(:func:`unique_png`, a nonce in every prompt): a repeated image would be served from vLLM's
multimodal processor and encoder caches and look nearly free.

Where: ``VISMEM_CALIBRATE_MODEL`` names a model YAML (its ``args.base_url``, ``model``,
``api_key_env``) or ``deployed:NAME`` (the endpoint `vismem serve up` deployed),
``VISMEM_CALIBRATE_BATCH`` (default 32), ``VISMEM_CALIBRATE_DEVICE`` (free text recorded, e.g.
H100). Without a model the benchmark measures the loopback capacity-modelled endpoint
(:mod:`vismem.serve.capacity`), whose costs are known: its records' targets say what it should
find. A record ``calibration`` carries the entry :func:`vismem.serve.throughput.load_calibration`
reads from the ``--out`` JSON.
"""

from __future__ import annotations

import io
import itertools
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from statistics import median
from typing import Any, Callable

from vismem.bench.harness import benchmark, record
from vismem.core.errors import ConfigError

NAME = "serve-throughput"
PREFILL_WORDS, DECODE_TOKENS, IMAGE_PX, MULTI, ROUNDS = 1200, 128, 512, 4, 3
#: The loopback endpoint's capacity model when no model is named: a request holds one of ``batch``
#: slots for ``base_s + per_token_s x max_tokens`` (its prompt costs it nothing).
SIM_BASE_S, SIM_PER_TOKEN_S = 0.05, 0.004

#: One timed run of a kind: (seconds, prompt tokens, reply tokens) of its batch of requests.
Run = tuple[float, int, int]

_IMAGES = itertools.count()


def unique_png(px: int) -> bytes:
    """A ``px``-square PNG whose pixels no other call's share: a colour from a counter and a row of
    16 pixels holding a random nonce. vLLM hashes an image's pixels to key its processor and
    encoder caches, so a calibration image is never served from a cache, here or in a later run
    against the same server."""
    from PIL import Image

    n = next(_IMAGES)
    img = Image.new("RGB", (px, px), ((37 * n) % 256, (11 * (n // 256)) % 256, 200))
    for i, b in enumerate(uuid.uuid4().bytes):
        img.putpixel((i % px, i // px), (b, 255 - b, b))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def image_url(px: int) -> dict[str, Any]:
    """An OpenAI ``image_url`` content part of a fresh :func:`unique_png`."""
    import base64

    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(unique_png(px)).decode()}}


def words(n: int) -> str:
    """About ``n`` words of shop text."""
    return " ".join(f"shelf{i % 97} lamp chair" for i in range(n // 3))


def solve(runs: dict[str, list[Run]], *, batch: int, multi: int = MULTI, model: str = "measured",
          device: str = "", source: str = "") -> Any:
    """The :class:`vismem.serve.throughput.Calibration` of timed runs of ``batch`` requests each
    (``runs[kind]``, the kinds of the module doc; the median of each kind), solved as the engine
    spends a run's wall: ``batch x`` seconds per request + prompt tokens / prefill rate (+ images x
    seconds per image, + decode steps).

    Without the short run the per-request cost (on the tiny model 1-5 ms: more than its image's
    encoder) was counted once a token in the prefill rate, once an image in the one-image run and
    once a step in decode, so the plan erred long by as many times as a request has images. Runs of
    one and of ``multi`` images a request part an image's cost from a request's with images (the
    one-image run alone charged each of an answer's images the multimodal request's cost)."""
    from vismem.serve.throughput import Calibration

    def med(kind: str, i: int) -> float:
        return float(median(r[i] for r in runs[kind]))

    ws, ps, wp, pp = med("short", 0), med("short", 1), med("prefill", 0), med("prefill", 1)
    # a long run no slower than a short one (a busy core in the short ones): prompt tokens / wall
    differential = wp > ws * 1.05 and pp > ps
    rate = (pp - ps) / (wp - ws) if differential else pp / wp
    # the mean context a token of that rate attended to: half its prompt, over the long prompts'
    # tokens beyond the short ones' ((pp^2 - ps^2) / 2 batch / (pp - ps)) or over all the long's
    context = (pp + ps) / (2 * batch) if differential else pp / (2 * batch)
    request = max(0.0, ws - ps / rate) / batch
    wd, pd, dd = med("decode", 0), med("decode", 1), med("decode", 2)
    steps = max(wd - batch * request - pd / rate, wd * 0.05)
    wi, pi, wm, pm = med("image", 0), med("image", 1), med("multi", 0), med("multi", 1)
    image = max(0.0, wm - wi - (pm - pi) / rate) / ((multi - 1) * batch)
    with_images = max(0.0, wi - batch * request - pi / rate - batch * image) / batch
    return Calibration(model=model, device=device, prefill_tokens_per_s=rate, prefill_context=context,
                       decode_tokens_per_s=dd / steps, decode_batch=batch, decode_context=(pd + dd / 2) / batch,
                       seconds_per_image=image, seconds_per_request=request, seconds_per_image_request=with_images,
                       source=source)


def _send(client: Any, bodies: list[dict[str, Any]]) -> Run:
    """All ``bodies`` at once: (seconds from the first request to the last reply, prompt tokens,
    reply tokens). A client that sends fewer at once is refused: the rest would queue in it, not in
    the engine, and the run would time the client."""
    n = len(bodies)
    if n > getattr(client, "max_concurrency", n):
        raise ConfigError(f"{NAME}: a batch of {n} needs a client of max_concurrency >= {n} "
                          f"(it has {client.max_concurrency}): the rest would queue in the client, not the engine")
    with ThreadPoolExecutor(n) as pool:
        t0 = time.perf_counter()
        replies = list(pool.map(lambda b: client.post("/chat/completions", b, who=NAME), bodies))
        wall = time.perf_counter() - t0
    usages = [r.get("usage") or {} for r in replies]
    if any(u.get("prompt_tokens") is None or u.get("completion_tokens") is None for u in usages):
        raise ConfigError(f"{NAME}: the endpoint's replies carry no usage (prompt/completion tokens) to time")
    return wall, sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)


def _user(model: str, parts: list[dict[str, Any]] | str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": parts}], "max_tokens": max_tokens,
            "temperature": 0.0, **extra}


def kinds(model: str, *, batch: int, prefill_words: int = PREFILL_WORDS, decode_words: int = 0,
          decode_tokens: int = DECODE_TOKENS, image_px: int = IMAGE_PX,
          multi: int = MULTI) -> dict[str, Callable[[], list[dict[str, Any]]]]:
    """Each kind of run (the module doc): a function making a fresh batch of its request bodies
    (a new nonce in every prompt, new images in every image request)."""
    extra = {"ignore_eos": True, "min_tokens": decode_tokens}

    def ask(text: str, images: int = 0) -> list[dict[str, Any]] | str:
        # text only as a plain string (an OpenAI server takes either); with images, a list of parts
        text = f"{uuid.uuid4().hex} {text}"
        return [{"type": "text", "text": text}, *(image_url(image_px) for _ in range(images))] if images else text

    return {"short": lambda: [_user(model, ask("what?"), 1) for _ in range(batch)],
            "prefill": lambda: [_user(model, ask(words(prefill_words)), 1) for _ in range(batch)],
            "decode": lambda: [_user(model, ask(f"{words(decode_words)} count the chairs"), decode_tokens, **extra)
                               for _ in range(batch)],
            "image": lambda: [_user(model, ask("what is shown?", 1), 1) for _ in range(batch)],
            "multi": lambda: [_user(model, ask("what is shown?", multi), 1) for _ in range(batch)]}


def run_round(client: Any, makers: dict[str, Callable[[], list[dict[str, Any]]]]) -> dict[str, Run]:
    """One run of each kind against ``client`` (a :class:`vismem.serve.http_client.RetryingJSONClient`)."""
    return {kind: _send(client, make()) for kind, make in makers.items()}


def measure(client: Any, model: str, *, batch: int = 32, rounds: int = ROUNDS, multi: int = MULTI,
            **sizes: Any) -> dict[str, Any]:
    """The calibration of ``client``'s ``model`` (``sizes``: :func:`kinds`' prefill_words,
    decode_words, decode_tokens, image_px): one untimed run of each kind, then ``rounds`` rounds;
    the :class:`~vismem.serve.throughput.Calibration` fields :func:`solve` gives, less model,
    device and source."""
    makers = kinds(model, batch=batch, multi=multi, **sizes)
    run_round(client, makers)
    runs: dict[str, list[Run]] = {k: [] for k in makers}
    for _ in range(rounds):
        for kind, run in run_round(client, makers).items():
            runs[kind].append(run)
    cal = solve(runs, batch=batch, multi=multi)
    return cal.model_dump(exclude={"model", "device", "source", "gpus"})


def _target() -> tuple[Any, str, str]:
    """``(client, model id, variant)`` of ``VISMEM_CALIBRATE_MODEL`` (client None without one):
    a model YAML's endpoint, or ``deployed:NAME``'s (the client `vismem serve up` gives runs)."""
    from vismem.serve.http_client import RetryingJSONClient

    variant = os.environ.get("VISMEM_CALIBRATE_MODEL")
    if variant and variant.startswith("deployed:"):
        from vismem.serve.build import build_vlm

        vlm = build_vlm(variant)  # its endpoint; a client of its own, so the batch queues in the engine
        client = RetryingJSONClient(vlm.base_url, api_key_env=vlm.api_key_env, timeout_s=600, max_concurrency=1024)
        return client, str(vlm.model), variant.split(":", 1)[1]
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
                        expected: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """The benchmark's records: the figures, each figure's error against a known capacity where
    ``expected`` gives one (the loopback self-check: ``{field: value}``) and a ``calibration``
    record carrying the entry."""
    recs = [record(NAME, "prefill tokens/s", cal["prefill_tokens_per_s"], "tokens/s", better="higher"),
            record(NAME, f"decode tokens/s (batch {cal['decode_batch']})", cal["decode_tokens_per_s"], "tokens/s",
                   better="higher"),
            record(NAME, "seconds per image (vision)", cal["seconds_per_image"], "s"),
            record(NAME, "seconds per request (engine)", cal["seconds_per_request"], "s"),
            record(NAME, "seconds per request with images, beyond them", cal["seconds_per_image_request"], "s")]
    for key, value in (expected or {}).items():
        recs.append(record(NAME, f"{key} error vs the capacity model", abs(cal[key] / value - 1), "fraction",
                           target=0.25))
    entry = {"model": variant, "device": device, **cal,
             "source": f"vismem bench {NAME} {time.strftime('%Y-%m-%d')} ({device})"}
    return recs + [{**record(NAME, "calibration", 1.0, "entry"), "calibration": entry}]


@benchmark(NAME, "a served VLM's prefill tokens/s, decode tokens/s at a batch, vision s/image and engine s/request "
           "over the OpenAI API (VISMEM_CALIBRATE_MODEL; the loopback simulator without): the file vismem plan "
           "--calibration reads")
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
    # batch slots, all taken at once, each held base + per_token x max_tokens: a batch's wall is
    # base + per_token x D whatever its prompts, which the engine's terms read as batch requests
    # of base / batch each and D steps of per_token (a step serves all batch sequences). The
    # per-request figure also holds the in-process server's own HTTP work (serial, and more under
    # load): recorded beside its capacity-model value, not held to it.
    recs = calibration_records(cal, "loopback", "loopback simulator",
                               expected={"decode_tokens_per_s": batch / SIM_PER_TOKEN_S})
    return recs + [record(NAME, "seconds per request x batch (capacity model: base + one token = "
                          f"{SIM_BASE_S + SIM_PER_TOKEN_S:g} s)", cal["seconds_per_request"] * batch, "s")]
