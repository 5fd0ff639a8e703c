"""MemShot answers as batch inference on Ray Data's LLM layer (``ray.data.llm``).

``memshot.batch_inference: ray-data`` sends the answer calls through a ``ray.data.llm``
processor instead of driver threads, so they spread over the cluster: an OpenAI-compatible
endpoint (vLLM, Ray Serve LLM's gateway, a hosted API, the local server) through
``HttpRequestProcessorConfig``, a deployment on the job's own Ray Serve through
``ServeDeploymentProcessorConfig``, or the job's own vLLM engines through
``vLLMEngineProcessorConfig`` -- which one, and their row formats: :mod:`.processors`
(``memshot.processor``). Each row's request is built on the worker by the same client
code the thread path uses (:meth:`OpenAIVLM.request_body` over
:func:`vismem.memory.dialogue.answering.build_answer_message`), so the bodies, hence the answers
of a deterministic endpoint, are the same; the replies are read back into the same answer
records (``ok`` / ``malformed`` / ``error:<reason>``) by one reader (:func:`read_output`), so
caches and failure rules are unchanged.

Ray 2.60's HTTP stage sends a batch's requests one after another and raises after its last
retry, which would lose the whole job to one bad question. :class:`ResilientSessions` is the
stage's ``session_factory``: every request of a batch starts at once (up to the client's
``max_concurrency``), retries the way the project's client does, and a call that still fails
comes back as a reply carrying ``vismem_error`` -- recorded as that question's failed call.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from typing import Any

from vismem.core.secrets import Scrubber
from vismem.pipelines.memshot.processors import clip, engine_processor_config, request_row, serve_processor_config

__all__ = ["engine_processor_config", "serve_processor_config"]  # built here; defined in processors

#: Statuses retried (as ``vismem.serve.http_client`` does): rate limits and server errors.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class _Reply:
    """What the HTTP stage reads of a response: ``status``, ``reason``, ``json()``."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.status, self.reason, self._body = 200, "OK", body

    async def json(self) -> dict[str, Any]:
        return self._body

    async def __aenter__(self) -> "_Reply":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None


class _Session:
    def __init__(self, owner: "ResilientSessions") -> None:
        self.owner = owner
        self._sem = asyncio.Semaphore(max(1, owner.max_concurrency))
        self._http: Any = None

    async def __aenter__(self) -> "_Session":
        import aiohttp

        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.owner.timeout_s))
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._http.close()

    def post(self, url: str, *, headers: dict[str, str], data: Any) -> "asyncio.Task[_Reply]":
        # Started now, not when the stage awaits it: a batch's requests are in flight together.
        return asyncio.ensure_future(self._post(url, headers, data))

    async def _post(self, url: str, headers: dict[str, str], data: Any) -> _Reply:
        import aiohttp

        body = json.loads(data) if isinstance(data, (str, bytes)) else data
        if isinstance(body, dict) and "vismem_input_error" in body:  # the row could not be built
            bad = body["vismem_input_error"]
            return _Reply({"vismem_error": {"reason": f"input:{bad['type']}", "detail": bad["detail"]}})
        o = self.owner
        reason, detail = "error", ""
        # An error reply may repeat the request's key (``Invalid API key provided: Bearer ...``):
        # cut it before the text is cut short, so no part of it is kept.
        scrub = Scrubber(h.split(" ", 1)[-1] for h in headers.values()).known
        for attempt in range(o.max_retries + 1):
            t0 = time.perf_counter()
            try:
                async with self._sem, self._http.post(url, headers=headers, data=data) as resp:
                    text = await resp.text()
                    if resp.status == 200:
                        try:
                            out = json.loads(text)
                        except ValueError:
                            return _Reply({"vismem_error": {"reason": "malformed_response", "detail": scrub(text)[:300]}})
                        if isinstance(out, dict):
                            out["vismem_latency_s"] = time.perf_counter() - t0
                            return _Reply(out)
                        return _Reply({"vismem_error": {"reason": "malformed_response", "detail": scrub(text)[:300]}})
                    reason, detail = f"http_{resp.status}", scrub(text)[:500]
                    if resp.status not in RETRY_STATUSES and resp.status < 500:
                        break
            except asyncio.TimeoutError as e:
                reason, detail = "timeout", f"{type(e).__name__}: {e}"
            except aiohttp.ClientError as e:
                reason, detail = "connect", f"{type(e).__name__}: {e}"
            if attempt < o.max_retries:
                delay = min(o.backoff_s * 2 ** attempt, o.backoff_max_s)
                await asyncio.sleep(delay * (1.0 + 0.25 * random.random()))  # jitter: timing only
        return _Reply({"vismem_error": {"reason": reason, "detail": detail}})


class ResilientSessions:
    """``session_factory`` of the HTTP stage (picklable): see the module docstring."""

    def __init__(self, *, max_retries: int = 4, backoff_s: float = 1.0, backoff_max_s: float = 30.0,
                 timeout_s: float = 120.0, max_concurrency: int = 8) -> None:
        self.max_retries, self.backoff_s, self.backoff_max_s = int(max_retries), float(backoff_s), float(backoff_max_s)
        self.timeout_s, self.max_concurrency = float(timeout_s), int(max_concurrency)

    def __call__(self) -> _Session:
        return _Session(self)


def http_processor_config(spec: dict[str, Any], *, concurrency: int, batch_size: int) -> Any:
    """The ``HttpRequestProcessorConfig`` of an ``openai`` VLM spec (its endpoint, key and retry
    rule); the stage itself retries nothing (the sessions do)."""
    from ray.data.llm import HttpRequestProcessorConfig

    args = spec.get("args") or {}
    base = str(args.get("base_url", "http://127.0.0.1:8000/v1")).rstrip("/")
    key_env = args.get("api_key_env", "OPENAI_API_KEY")
    key = os.environ.get(key_env, "") if key_env else ""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    sessions = ResilientSessions(max_retries=args.get("max_retries", 4), backoff_s=args.get("backoff_s", 1.0),
                                 backoff_max_s=args.get("backoff_max_s", 30.0),
                                 timeout_s=args.get("timeout_s", 120.0),
                                 max_concurrency=args.get("max_concurrency", 8))
    return HttpRequestProcessorConfig(url=f"{base}/chat/completions", headers=headers, concurrency=concurrency,
                                      batch_size=batch_size, max_retries=0, session_factory=sessions)


def read_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """One reply of the HTTP stage read once: ``error`` (``error:<reason>`` or None), ``detail``,
    and for a reply with a completion its ``text``, token counts and ``latency_s``."""
    from vismem.serve.openai_format import parse_completion

    none = {"text": None, "prompt_tokens": None, "completion_tokens": None, "latency_s": None}
    err = reply.get("vismem_error")
    if err:
        return {**none, "error": f"error:{err['reason']}", "detail": str(err.get("detail", ""))[:300]}
    try:
        text, pt, ct = parse_completion(reply)
    except ValueError as e:
        return {**none, "error": "error:malformed_response", "detail": f"{e}: {str(reply)[:200]}"[:300]}
    return {"error": None, "detail": None, "text": text, "prompt_tokens": pt, "completion_tokens": ct,
            "latency_s": reply.get("vismem_latency_s")}


def read_output(kind: str, row: dict[str, Any], scrubber: Scrubber | None = None) -> dict[str, Any]:
    """The one reader of every processor's output row (``kind``: http | engine | serve), as
    :func:`read_reply` reads an HTTP reply: a row whose request could not be built is its
    ``error:input:<type>``, a row the engine or deployment failed (``__inference_error__``) its
    ``error:engine`` / ``error:serve``; else the reply's text and token counts. ``scrubber``: the
    client's credentials, cut from the whole row before it is read (an endpoint may echo them)
    and, with any URL user-info, from an error's detail, as the thread path's errors."""
    r = _read_output(kind, scrubber.known_in(row) if scrubber is not None else row)
    if r["detail"]:
        r["detail"] = (scrubber or Scrubber()).text(r["detail"])
    if r["text"] and scrubber is not None:  # a reply inside what the walk does not enter (arrays)
        r["text"] = scrubber.known(r["text"])
    return r


def _read_output(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    from vismem.pipelines.memshot.processors import engine_reply

    none = {"text": None, "prompt_tokens": None, "completion_tokens": None, "latency_s": None}
    if kind == "http":
        return read_reply(row["http_response"])
    if row.get("vismem_input_error"):
        bad = json.loads(row["vismem_input_error"])
        return {**none, "error": f"error:input:{bad['type']}", "detail": bad["detail"]}
    if kind == "engine":
        return engine_reply(row)
    if row.get("__inference_error__"):
        return {**none, "error": "error:serve", "detail": clip(str(row["__inference_error__"]))}
    if isinstance(row.get("error"), dict):  # the deployment's ErrorResponse
        code = row["error"].get("code")
        return {**none, "error": f"error:serve_{code}" if code else "error:serve",
                "detail": str(row["error"].get("message", ""))[:300]}
    return {**read_reply(row), "latency_s": row.get("time_taken")} if "choices" in row else \
        {**none, "error": "error:malformed_response", "detail": f"no choices: {str(row)[:200]}"[:300]}


def answer_record(r: dict[str, Any]) -> dict[str, Any]:
    """An answer record (status, prediction, tokens, latency) from one reply as read."""
    from vismem.memory.dialogue.answering import is_malformed_answer

    if r["error"]:
        return {"prediction": None, "answer_status": r["error"], "answer_latency_s": None, "prompt_tokens": None,
                "completion_tokens": None, "raw_answer": r["detail"]}
    bad = is_malformed_answer(r["text"])
    return {"prediction": None if bad else r["text"].strip(), "answer_status": "malformed" if bad else "ok",
            "answer_latency_s": r["latency_s"], "prompt_tokens": r["prompt_tokens"],
            "completion_tokens": r["completion_tokens"], "raw_answer": (r["text"] or "")[:300]}


def reply_record(reply: dict[str, Any]) -> dict[str, Any]:
    """An answer record from one reply of the HTTP stage."""
    return answer_record(read_reply(reply))


def answer_request_fn(vlm_spec: dict[str, Any], dataset: str, store: Any, max_tokens: int, temperature: float,
                kind: str = "http") -> Any:
    """The processor's preprocess: a row (question, shown units) -> the chat request body, built on
    the worker by the same code as the thread path (images read from the store there), in the
    row format of the processor ``kind``."""

    def request(row: dict[str, Any]) -> dict[str, Any]:
        from vismem.memory.dialogue.answering import build_answer_message
        from vismem.serve.build import build_vlm

        body, err = None, None
        try:
            msg = build_answer_message(dataset, json.loads(row["question"]), json.loads(row["units"]),
                                       store.get_bytes, header=bool(row["header"]))
            body = build_vlm(vlm_spec).request_body([msg], max_tokens=max_tokens, temperature=temperature)
            n_images = len(msg.images)
        except Exception as e:  # noqa: BLE001 - an unreadable shot is that question's failure
            err, n_images = e, 0
        return {"i": row["i"], "n_images": n_images, **request_row(kind, vlm_spec, body, err)}

    return request


def answer_reply_fn(kind: str = "http", scrubber: Scrubber | None = None) -> Any:
    """The processor's postprocess: one answer record (and its task index) per reply, without the
    credentials ``scrubber`` holds."""

    def reply(row: dict[str, Any]) -> dict[str, Any]:
        return {"i": row["i"], "n_images": row["n_images"], **answer_record(read_output(kind, row, scrubber))}

    return reply


def answer_row(kind: str, row: dict[str, Any], scrubber: Scrubber | None = None) -> dict[str, Any]:
    """A returned row as an answer record: a row the engine or deployment failed skipped the
    postprocess (Ray's ``should_continue_on_error``) and is read here -- a failed call."""
    if not row.get("__inference_error__"):
        return row
    return {"i": row["i"], "n_images": 0 if row.get("vismem_input_error") else int(row.get("n_images") or 0),
            **answer_record(read_output(kind, row, scrubber))}


def processor_for(choice: Any, spec: dict[str, Any], *, concurrency: int, batch_size: int, weights: str | None,
                  preprocess: Any, postprocess: Any) -> Any:
    """The ``ray.data.llm`` processor of a :class:`vismem.pipelines.memshot.processors.Choice`
    (None: http) over ``spec``."""
    from ray.data.llm import build_processor

    from vismem.pipelines.memshot.processors import chat_template_kwargs, cpu_map_kwargs

    kind, extra = getattr(choice, "kind", "http"), {}
    if kind == "http":
        cfg = http_processor_config(spec, concurrency=concurrency, batch_size=batch_size)
    elif kind == "engine":
        cfg = engine_processor_config(choice.model, weights=weights, concurrency=concurrency, batch_size=batch_size)
        extra = cpu_map_kwargs(choice.model)
        if chat_template_kwargs(spec):
            extra["builder_kwargs"] = {"chat_template_kwargs": chat_template_kwargs(spec)}
    else:
        cfg = serve_processor_config(choice.deployment, app=choice.app, concurrency=concurrency,
                                     batch_size=batch_size, timeout_s=(spec.get("args") or {}).get("timeout_s"))
    return build_processor(cfg, preprocess=preprocess, postprocess=postprocess, **extra)


def answers_on_ray_data(tasks: Any, units: Any, questions: Any, vlm_spec: dict[str, Any], *, dataset: str,
                        store: Any, max_tokens: int, temperature: float = 0.0, order: str = "rank",
                        headerless: Any = None, concurrency: int = 1, batch_size: int = 16, choice: Any = None,
                        weights: str | None = None) -> Any:
    """:func:`vismem.memory.dialogue.answering.generate_answers` as a ``ray.data.llm`` job over an
    ``openai`` spec: the same answer rows, in task order. ``choice``: the processor
    (:func:`vismem.pipelines.memshot.processors.choose_for`; None: http); ``weights``: the
    in-job engine's weights root."""
    import polars as pl
    import ray.data

    from vismem.memory.dialogue.answering import ANSWER_SCHEMA, answer_key, headerless_variants
    from vismem.memory.dialogue.datasets import get_dataset

    if vlm_spec.get("name") != "openai":
        raise ValueError(f"batch inference over ray.data.llm needs an openai endpoint spec, not {vlm_spec.get('name')!r}")
    task_rows = list(tasks.iter_rows(named=True))
    if not task_rows:
        return pl.DataFrame(schema=ANSWER_SCHEMA)
    unit_rows = {(r["variant"], str(r["unit_id"])): r for r in units.iter_rows(named=True)}
    q_rows = {(r["conversation_id"], r["question_id"]): r for r in questions.iter_rows(named=True)}
    bare = set(headerless_variants(tasks["variant"].unique().to_list()) if headerless is None else headerless)
    rows = []
    for i, task in enumerate(task_rows):
        shown = [unit_rows[(task["variant"], str(u))] for u in task["unit_ids"]]
        if order == "chronological":
            shown.sort(key=lambda u: (u.get("session_index") or 0, u.get("unit_index") or 0))
        q = q_rows[(task["conversation_id"], task["question_id"])]
        rows.append({"i": i, "question": json.dumps(q, default=str), "header": task["variant"] not in bare,
                     "units": json.dumps([{k: u.get(k) for k in ("modality", "text", "image_key")} for u in shown])})
    kind = getattr(choice, "kind", "http")
    scrubber = _scrubber(vlm_spec)
    processor = processor_for(choice, vlm_spec, concurrency=concurrency, batch_size=batch_size, weights=weights,
                              preprocess=answer_request_fn(vlm_spec, dataset, store, max_tokens, temperature, kind),
                              postprocess=answer_reply_fn(kind, scrubber))
    from vismem.pipelines.rayctx import collect

    replies = {int(r["i"]): answer_row(kind, r, scrubber)
               for r in collect(processor(ray.data.from_items(rows)), "memshot answers", total=len(rows))}
    if len(replies) != len(rows):
        raise RuntimeError(f"answer job returned {len(replies)} replies for {len(rows)} questions")
    post = getattr(get_dataset(dataset), "postprocess_answer", None)
    out = []
    for i, task in enumerate(task_rows):
        rec = {k: replies[i][k] for k in ("prediction", "answer_status", "answer_latency_s", "prompt_tokens",
                                          "completion_tokens", "raw_answer")}
        if rec["prediction"] is not None and post is not None:
            rec["prediction"] = post(q_rows[(task["conversation_id"], task["question_id"])], rec["prediction"])
        out.append({**answer_key(task), **rec, "n_images": int(replies[i]["n_images"])})
    return pl.DataFrame(out, schema=ANSWER_SCHEMA)


def judge_request_fn(judge_spec: dict[str, Any], max_tokens: int, kind: str = "http") -> Any:
    def request(row: dict[str, Any]) -> dict[str, Any]:
        from vismem.serve.build import build_vlm
        from vismem.serve.vlm import Message

        body = build_vlm(judge_spec).request_body([Message(role="user", text=row["prompt"])], max_tokens=max_tokens,
                                                  temperature=0.0)
        return {"i": row["i"], **request_row(kind, judge_spec, body, None)}

    return request


def _scrubber(spec: dict[str, Any]) -> Scrubber:
    """The credentials of an ``openai`` spec's client, read in the driver (as its header is)."""
    from vismem.serve.build import build_vlm

    return build_vlm(spec).scrubber()


def judge_reply_fn(kind: str = "http", scrubber: Scrubber | None = None) -> Any:
    def reply(row: dict[str, Any]) -> dict[str, Any]:
        r = read_output(kind, row, scrubber)
        return {"i": row["i"], **{k: r[k] for k in ("error", "detail", "text", "latency_s")}}

    return reply


def verdicts_on_ray_data(answers: Any, questions: Any, judge_spec: dict[str, Any], *, dataset: str,
                         max_tokens: int | None = None, parse: str = "official", retries: int = 2,
                         concurrency: int = 1, batch_size: int = 16, choice: Any = None,
                         weights: str | None = None) -> Any:
    """:func:`vismem.memory.dialogue.answering.judge_answers` as ``ray.data.llm`` jobs over an
    ``openai`` judge spec: the same verdict columns. A reply without a verdict is asked again
    (``retries`` more rounds, each one job over the questions still without one). ``choice``,
    ``weights``: as :func:`answers_on_ray_data`."""
    import polars as pl
    import ray.data

    from vismem.memory.dialogue.datasets import get_dataset
    from vismem.memory.dialogue.scoring import JUDGE_FAILURES
    from vismem.pipelines.rayctx import collect

    if judge_spec.get("name") != "openai":
        raise ValueError(f"batch inference over ray.data.llm needs an openai endpoint spec, not {judge_spec.get('name')!r}")
    ds = get_dataset(dataset)
    parse_reply = getattr(ds, "parse_judge_strict", ds.parse_judge) if parse == "strict" else ds.parse_judge
    max_tokens = max_tokens or int(getattr(ds, "judge_max_tokens", 256))
    q_rows = {(r["conversation_id"], r["question_id"]): r for r in questions.iter_rows(named=True)}
    rows = list(answers.iter_rows(named=True))
    out: list[dict[str, Any]] = [{"judge_label": None, "judge_status": "skipped", "judge_reason": None,
                                  "judge_latency_s": None} for _ in rows]
    pending = {i: ds.judge_prompt({**q_rows[(r["conversation_id"], r["question_id"])], "question_id": r["question_id"]},
                                  r["prediction"]) for i, r in enumerate(rows) if r["prediction"] is not None}
    kind = getattr(choice, "kind", "http")
    scrubber = _scrubber(judge_spec)
    processor = processor_for(choice, judge_spec, concurrency=concurrency, batch_size=batch_size, weights=weights,
                              preprocess=judge_request_fn(judge_spec, max_tokens, kind),
                              postprocess=judge_reply_fn(kind, scrubber))
    for attempt in range(max(0, retries) + 1):
        if not pending:
            break
        replies = collect(processor(ray.data.from_items([{"i": i, "prompt": p} for i, p in pending.items()])),
                          "memshot judge", total=len(pending))
        again = {}
        for rep in replies:
            i = int(rep["i"])
            if rep.get("__inference_error__"):  # a failed row skips the postprocess
                rep = {"i": i, **read_output(kind, rep, scrubber)}
            if rep["error"]:
                out[i] = {"judge_label": None, "judge_status": rep["error"], "judge_reason": rep["detail"],
                          "judge_latency_s": None}
                continue
            label, status, reason = parse_reply(rep["text"])
            out[i] = {"judge_label": label, "judge_status": status, "judge_reason": reason,
                      "judge_latency_s": rep["latency_s"]}
            if label is None and status in JUDGE_FAILURES and attempt < retries:
                again[i] = pending[i]
        pending = again
    extra = pl.DataFrame(out, schema={"judge_label": pl.Boolean, "judge_status": pl.Utf8, "judge_reason": pl.Utf8,
                                      "judge_latency_s": pl.Float64})
    return pl.concat([answers, extra], how="horizontal")
