"""Which ``ray.data.llm`` processor asks MemShot's answers and verdicts, and its rows.

``memshot.batch_inference: ray-data`` sends the calls through one of Ray Data's LLM processors,
chosen per model (``memshot.processor`` for the answering VLM, ``memshot.judge_processor`` for
the judge; ``auto`` by default) by :func:`choose_processor`:

* ``serve`` -- ``ServeDeploymentProcessorConfig``: the model runs as a ``ray.serve.llm``
  deployment on the run's own Ray cluster (``LLMServer:<model id>`` in the ``vllm`` app), asked
  through its deployment handle, not the HTTP proxy;
* ``http`` -- ``HttpRequestProcessorConfig``: any OpenAI-compatible endpoint (a hosted API, a
  ``base_url``, a deployment on another cluster through its Serve proxy, a vismem Serve app);
* ``engine`` -- ``vLLMEngineProcessorConfig``: a model variant with ``deploy.engine: vllm`` that
  nothing serves (not deployed here, its endpoint does not answer): the job starts its own engines.

Every processor is given the same prompt: the request body the HTTP path sends
(:meth:`vismem.serve.backends.openai.OpenAIVLM.request_body`), turned into the processor's row
by :func:`engine_row` / :func:`serve_row` (its ``messages`` unchanged); every reply is read back
by one reader (:func:`vismem.pipelines.memshot.batch_llm.read_output`) into the same answer
records, so caches, failure rules and tables do not depend on the processor.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Callable

from vismem.core.errors import ConfigError

#: The values of ``memshot.processor`` / ``memshot.judge_processor``.
PROCESSORS = ("auto", "http", "serve", "engine")
#: vLLM ``SamplingParams`` fields a spec's ``extra_body`` may set on the engine path.
SAMPLING_KEYS = frozenset({"top_p", "top_k", "min_p", "stop", "seed", "repetition_penalty", "presence_penalty",
                           "frequency_penalty", "min_tokens", "n"})
#: How the ``ray.serve.llm`` deployment is asked (Ray 2.60: ``LLMServer.chat``).
SERVE_METHOD, SERVE_DTYPE = "chat", "ChatCompletionRequest"


@dataclass(frozen=True)
class Choice:
    """The processor of one model: ``kind`` (http | serve | engine), why, and what it reaches."""

    kind: str
    reason: str
    model: str | None = None  # the vLLM model variant (serve, engine)
    app: str | None = None  # serve: the Serve app and deployment
    deployment: str | None = None

    def record(self) -> dict[str, Any]:
        """What the stage summary and the run manifest keep."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def vllm_variant(key: str | None) -> str | None:
    """The model variant behind a configured name (``NAME`` or ``deployed:NAME``) when it is one
    with ``deploy.engine: vllm`` (``serve/models/NAME.yaml``); None for anything else."""
    from vismem.serve.hosting import DEPLOYED_PREFIX, deployable
    from vismem.serve.models import list_models
    from vismem.serve.registry import registered

    name = (key or "")[len(DEPLOYED_PREFIX):] if (key or "").startswith(DEPLOYED_PREFIX) else key
    if name not in list_models("vlm"):
        return None
    try:
        return name if deployable(name, registered()).settings.engine == "vllm" else None
    except ConfigError:  # a hosted API: nothing to deploy
        return None


def check_processor(field: str, forced: str, key: str | None, model: str | None, *, batch_inference: str) -> None:
    """Reject, before any work, a forced processor the model cannot take: ``serve`` and
    ``engine`` need a vLLM model variant (``model``: :func:`vllm_variant` of ``key``), and any
    forced processor needs ``memshot.batch_inference: ray-data``."""
    if forced not in PROCESSORS:
        raise ConfigError(f"{field}: {forced!r} is not one of {', '.join(PROCESSORS)}")
    if forced == "auto":
        return
    if batch_inference != "ray-data":
        raise ConfigError(f"{field}: {forced} is a ray.data.llm processor; it needs memshot.batch_inference: ray-data "
                          f"(is {batch_inference})")
    if forced in ("serve", "engine") and model is None:
        what = "the deployed vLLM model" if forced == "serve" else "an in-job vLLM engine"
        raise ConfigError(f"{field}: {forced} ({what}) needs a model variant with deploy.engine: vllm "
                          f"(serve/models/NAME.yaml, or deployed:NAME); {key!r} is not one: use http or auto")


def check_processors(cfg: Any) -> None:
    """The stage check of ``memshot.processor`` and ``memshot.judge_processor`` (``cfg``: the
    MemShot config): :func:`check_processor` for each configured model, and a forced engine's
    requests must have an engine equivalent (:func:`check_engine_spec`)."""
    from vismem.pipelines.memshot.judge import judge_request
    from vismem.serve.registry import VLMS

    for name, field in (("vlm", "processor"), ("judge", "judge_processor")):
        spec, forced = getattr(cfg, name), getattr(cfg, field)
        if spec is None:
            continue
        key = getattr(spec, "key", None)
        check_processor(f"memshot.{field}", forced, key, vllm_variant(key), batch_inference=cfg.batch_inference)
        if forced == "engine":
            resolved = VLMS.resolve(spec, field=f"memshot.{name}")
            check_engine_spec(f"memshot.{field}", judge_request(resolved, 1)[0] if name == "judge" else resolved)


def choose_processor(field: str, forced: str, key: str | None, model: str | None, model_id: str | None, *,
                     batch_inference: str, on_cluster: Callable[[str, str], bool],
                     endpoint_up: Callable[[], bool]) -> Choice:
    """The processor for one model, and why (pure: what is deployed comes from the callables).

    ``key``: the configured name; ``model``/``model_id``: its vLLM model variant and the id Serve
    names it by (None when it is not one). ``on_cluster(app, deployment)``: whether the run's Ray
    cluster serves that deployment; ``endpoint_up()``: whether the spec's endpoint answers.
    ``forced`` (``auto`` | ``http`` | ``serve`` | ``engine``) overrides the rule:
    the deployment on this cluster -> serve; else the endpoint answers or the model is not a vLLM
    variant -> http; else (nothing serves the vLLM variant) -> engine.
    """
    from vismem.serve.hosting import DEPLOYED_PREFIX, LLM_APP
    from vismem.serve.replica_stack import llm_deployment_name

    check_processor(field, forced, key, model, batch_inference=batch_inference)
    if forced == "http":
        return Choice("http", f"{field}: http (forced)")
    if model is None:
        return Choice("http", f"{key}: an OpenAI-compatible endpoint, not a vLLM model variant")
    deployment = f"LLMServer:{llm_deployment_name(str(model_id))}"
    serve = Choice("serve", "", model, LLM_APP, deployment)
    here = on_cluster(LLM_APP, deployment)
    if forced == "serve":
        if not here:
            raise ConfigError(f"{field}: serve (forced), but this Ray cluster's Serve runs no {deployment} in app "
                              f"{LLM_APP!r}: `vismem serve up {model}` on this cluster, or use http / engine")
        return Choice(**{**asdict(serve), "reason": f"{field}: serve (forced): {deployment} on this cluster"})
    if forced == "engine":
        return Choice("engine", f"{field}: engine (forced): in-job vLLM engines of {model}", model)
    if here:
        return Choice(**{**asdict(serve), "reason": f"{model} is deployed on this Ray cluster ({LLM_APP}/{deployment})"})
    if (key or "").startswith(DEPLOYED_PREFIX):
        return Choice("http", f"{key}: deployed on another cluster, reached through its Serve proxy")
    if endpoint_up():
        return Choice("http", f"{model}: its endpoint answers")
    return Choice("engine", f"{model}: nothing serves it (not deployed here, its endpoint does not answer): "
                  "in-job vLLM engines", model)


def serve_has(app: str, deployment: str) -> bool:
    """Whether the Serve instance of the connected Ray cluster runs ``deployment`` in ``app``
    (False when there is no Serve, or no Ray)."""
    try:
        import ray
        from ray import serve

        if not ray.is_initialized():
            return False
        status = serve.status()
    except Exception:  # noqa: BLE001 - no Serve on this cluster: nothing deployed here
        return False
    found = status.applications.get(app)
    return bool(found and deployment in found.deployments)


def endpoint_answers(spec: dict[str, Any]) -> bool:
    """Whether an ``openai`` spec's endpoint answers ``GET /models`` (5 s)."""
    import httpx

    base = str((spec.get("args") or {}).get("base_url") or "").rstrip("/")
    if not base:
        return False
    try:
        return httpx.get(f"{base}/models", timeout=httpx.Timeout(5.0, connect=2.0)).status_code == 200
    except Exception:  # noqa: BLE001 - refused, timeout, bad address: nothing answers there
        return False


def choose_for(field: str, forced: str, key: str | None, spec: dict[str, Any], *, batch_inference: str) -> Choice:
    """:func:`choose_processor` for a configured model, asking this cluster's Serve and the
    spec's endpoint (only when the rule needs them)."""
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    model = vllm_variant(key)
    model_id = deployable(model, registered()).model_id if model else None
    return choose_processor(field, forced, key, model, model_id, batch_inference=batch_inference,
                            on_cluster=serve_has, endpoint_up=lambda: endpoint_answers(spec))


def input_error(err: Exception) -> str:
    """A row whose request could not be built (an unreadable shot), as the row carries it."""
    return json.dumps({"type": type(err).__name__, "detail": str(err)[:300]})


def engine_row(body: dict[str, Any]) -> dict[str, Any]:
    """The vLLM engine processor's row of an OpenAI chat request body: its ``messages`` as they
    are (OpenAI format, images as data URLs: what the prepare-multimodal and chat-template
    stages read) and ``sampling_params`` (``max_tokens``, ``temperature``, ``seed`` and the
    sampling fields of the spec's ``extra_body``). ``model`` is the processor's;
    ``chat_template_kwargs`` go to the processor (:func:`chat_template_kwargs`)."""
    sampling = {"max_tokens": int(body["max_tokens"]), "temperature": float(body["temperature"])}
    for k, v in body.items():
        if k in SAMPLING_KEYS:
            sampling[k] = v
        elif k not in ("model", "messages", "max_tokens", "temperature", "chat_template_kwargs"):
            raise ConfigError(f"request field {k!r} has no vLLM engine equivalent (in-job engine: "
                              f"{', '.join(sorted(SAMPLING_KEYS))} or chat_template_kwargs)")
    return {"messages": parts_content(body["messages"]), "sampling_params": sampling}


def parts_content(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every plain-string content as one text part. Ray Data stores a block's
    rows in Arrow, which cannot unify a text-only turn sent as a string with an image turn sent as
    a list of parts (``ArrowTypeError: Unable to merge``; a Qwen3-VL answer block failed whole on the
    real engine); the chat templates render both forms alike."""
    return [{**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m.get("content"), str) else m
            for m in messages]


def serve_row(body: dict[str, Any]) -> dict[str, Any]:
    """The Serve deployment processor's row of an OpenAI chat request body: ``LLMServer.chat``
    called with a ``ChatCompletionRequest`` of the same fields, one reply (not streamed); content
    as parts, as in :func:`engine_row`."""
    return {"method": SERVE_METHOD, "dtype": SERVE_DTYPE,
            "request_kwargs": {**body, "messages": parts_content(body["messages"]), "stream": False}}


def request_row(kind: str, spec: dict[str, Any], body: dict[str, Any] | None, err: Exception | None) -> dict[str, Any]:
    """The processor's row of one request body (the HTTP path's, whatever the processor): the
    ``payload`` (http), the engine's ``messages`` + ``sampling_params``, or the deployment's
    ``request_kwargs``. A request that could not be built (``err``) is carried as the row's
    failure; the engine and deployment still get a valid one-token request for it."""
    if kind == "http":
        return {"payload": body if err is None else {"vismem_input_error": json.loads(input_error(err))}}
    if err is not None:
        from vismem.serve.build import build_vlm
        from vismem.serve.vlm import Message

        body = build_vlm(spec).request_body([Message(role="user", text=".")], max_tokens=1, temperature=0.0)
    assert body is not None
    return {**(engine_row(body) if kind == "engine" else serve_row(body)),
            "vismem_input_error": "" if err is None else input_error(err)}


def chat_template_kwargs(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The chat-template arguments a spec sends in its requests (``extra_body``), which the engine
    processor takes once for all rows (a Qwen3 judge's ``enable_thinking: false``)."""
    got = ((spec.get("args") or {}).get("extra_body") or {}).get("chat_template_kwargs")
    return dict(got) if got else None


def check_engine_spec(field: str, spec: dict[str, Any]) -> None:
    """ConfigError naming ``field`` when a spec's request has a field the engine cannot take."""
    from vismem.serve.build import build_vlm
    from vismem.serve.vlm import Message

    body = build_vlm(spec).request_body([Message(role="user", text=".")], max_tokens=1, temperature=0.0)
    try:
        engine_row(body)
    except ConfigError as err:
        raise ConfigError(f"{field}: {err}") from None


def engine_reply(row: dict[str, Any]) -> dict[str, Any]:
    """The engine stage's output of one row, read as :func:`vismem.pipelines.memshot.batch_llm.read_reply`
    reads an HTTP reply: ``error`` (``error:engine`` for a row the engine failed:
    ``__inference_error__``), ``detail``, ``text``, token counts, ``latency_s``."""
    none = {"text": None, "prompt_tokens": None, "completion_tokens": None, "latency_s": None}
    err = row.get("__inference_error__") or ""
    if err:
        return {**none, "error": "error:engine", "detail": clip(str(err))}
    text = row.get("generated_text")
    if not isinstance(text, str):
        return {**none, "error": "error:malformed_response", "detail": f"no generated_text: {str(row)[:200]}"[:300]}
    latency = row.get("time_taken_llm")
    return {"error": None, "detail": None, "text": text, "prompt_tokens": _int(row.get("num_input_tokens")),
            "completion_tokens": _int(row.get("num_generated_tokens")),
            "latency_s": float(latency) if latency is not None and float(latency) >= 0 else None}


def clip(text: str, n: int = 300) -> str:
    """At most ``n`` characters of an error: its head (the kind) and its tail (a remote error's
    own message comes after the traceback)."""
    return text if len(text) <= n else f"{text[:n // 2 - 3]} .. {text[-(n // 2 - 1):]}"


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def engine_processor_config(model: str, *, weights: str | None = None, concurrency: int = 1, batch_size: int = 16,
                            env: dict[str, str] | None = None) -> Any:
    """A ``vLLMEngineProcessorConfig`` for a served model variant (``serve/models/NAME.yaml`` with
    ``deploy.engine: vllm``) when nothing is deployed: the job starts its own engines as the served
    deployment of the variant runs (:func:`vismem.serve.deploy.llm_config`): the weights under root
    ``weights`` (``memshot.engine_weights``; default the cluster's models dir) by the same rule
    (:func:`vismem.serve.deploy.model_source`), the engine arguments (pixel bounds included), the
    accelerator, STRICT_PACK over several GPUs, and the engine's environment
    (:func:`vismem.serve.deploy.engine_env`: ``VLLM_BATCH_INVARIANT`` where the YAML sets it, so
    greedy answers reproduce whatever shares the batch). Built in the job, on the cluster: ``${VAR}``
    and ``~`` in the path expand with this process's environment (``env`` in tests).

    How the stages read ``model_source`` (Ray 2.60, ``ray.llm._internal.batch``): the chat-template
    (``AutoProcessor``), tokenize and detokenize stages (CPU actors) and the engine stage call
    Ray's ``download_model_files``. A path or hub id passes through (a models dir must then be
    mounted on every node running a stage). An ``s3://`` / ``gs://`` source is copied into the
    node's Hugging Face cache with the node's own credentials (boto3's default chain): for the
    CPU stages only the files whose names hold ``tokenizer``, ``config.json`` or
    ``chat_template`` (tokenizer.json, tokenizer_config.json, config.json,
    preprocessor_config.json, chat_template.*; no weights), for the engine the whole folder, which
    vLLM then loads locally. The prepare-multimodal stage of a VLM gives the source to vLLM's
    ``ModelConfig`` instead: it needs vLLM on its node, and for an ``s3://`` source vLLM pulls
    the ``*.json`` files through its Run:ai streamer (``runai-model-streamer``, vLLM's ``runai``
    extra; Ray's ``llm`` extra does not install it). Weights from a root other than ``hub`` are
    read as synced: ``HF_HUB_OFFLINE=1`` keeps every stage from fetching from the hub instead.
    Validated by Ray's own model; running it needs GPUs and vLLM on the nodes."""
    from ray.data.llm import vLLMEngineProcessorConfig

    from vismem.serve.deploy import engine_env, model_source, placement_group
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered
    from vismem.serve.weights import DEFAULT_ROOT, HUB, check_root, node_model_source

    root = check_root(DEFAULT_ROOT if weights is None else weights)
    d = deployable(model, registered(), env=env)
    if d.settings.engine != "vllm":
        raise ValueError(f"model {model!r} is not a vLLM variant (deploy.engine: {d.settings.engine})")
    env_vars = {**engine_env(d), **({} if root == HUB else {"HF_HUB_OFFLINE": "1"})}
    on_cpu = d.settings.device == "cpu"
    stages = cpu_stages(d.kind == "vlm") if on_cpu else {"prepare_multimodal_stage": d.kind == "vlm"}
    return vLLMEngineProcessorConfig(
        model_source=node_model_source(model_source(d, root), env), engine_kwargs=dict(d.settings.engine_kwargs),
        accelerator_type=d.settings.accelerator_type, runtime_env={"env_vars": env_vars},
        placement_group_config=CPU_ENGINE_BUNDLES if on_cpu else placement_group(d.settings.engine_kwargs),
        concurrency=concurrency, batch_size=batch_size, should_continue_on_error=True, **stages)


#: The in-job engine's placement on a CPU engine (``deploy.device: cpu``): one CPU bundle, which is
#: also what keeps Ray from asking for a GPU (with tp = pp = 1 and no bundles it asks for one).
CPU_ENGINE_BUNDLES = {"bundles": [{"CPU": 1}]}
#: CPUs of each small stage (chat template, tokenize, prepare-multimodal, detokenize) and of the
#: pre/postprocess maps beside a CPU engine: Ray's default of 1 each (about 4 CPUs) does not fit
#: beside the engine on a small node, and Ray Data then waits for CPUs forever, without an error.
CPU_STAGE_CPUS = 0.25


def cpu_stages(vlm: bool) -> dict[str, Any]:
    """The small stages' configs of a CPU engine processor (:data:`CPU_STAGE_CPUS` each)."""
    small = {"num_cpus": CPU_STAGE_CPUS}
    return {"chat_template_stage": dict(small), "tokenize_stage": dict(small), "detokenize_stage": dict(small),
            "prepare_multimodal_stage": {"enabled": vlm, **small}}


def cpu_map_kwargs(model: str) -> dict[str, Any]:
    """``build_processor``'s pre/postprocess map arguments for the in-job engine of ``model``:
    :data:`CPU_STAGE_CPUS` each on a CPU engine, Ray's defaults otherwise."""
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    if deployable(model, registered()).settings.device != "cpu":
        return {}
    return {"preprocess_map_kwargs": {"num_cpus": CPU_STAGE_CPUS}, "postprocess_map_kwargs": {"num_cpus": CPU_STAGE_CPUS}}


def serve_processor_config(deployment: str, *, app: str = "default", concurrency: int = 1, batch_size: int = 16,
                           dtype: Any = None, timeout_s: float | None = None) -> Any:
    """A ``ServeDeploymentProcessorConfig`` over a model already deployed on the cluster's Ray Serve
    (a failed row is recorded, not raised: ``should_continue_on_error``). ``dtype``: the request
    class of :data:`SERVE_DTYPE` (default Ray Serve LLM's ``ChatCompletionRequest``, which needs
    vLLM where the job is built)."""
    from ray.data.llm import ServeDeploymentProcessorConfig

    if dtype is None:
        try:
            from ray.serve.llm.openai_api_models import ChatCompletionRequest as dtype
        except ImportError as err:
            raise ConfigError(f"the serve processor builds Ray Serve LLM's {SERVE_DTYPE}, which needs vLLM "
                              f"where the job runs ({err})") from None
    return ServeDeploymentProcessorConfig(deployment_name=deployment, app_name=app, concurrency=concurrency,
                                          batch_size=batch_size, should_continue_on_error=True,
                                          dtype_mapping={SERVE_DTYPE: plain_request(dtype)},
                                          request_timeout_s=timeout_s)


def to_plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as Python lists and numbers, at any depth."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return [to_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def plain_request(base: type) -> type:
    """``base`` (a pydantic request class) built from a row's ``request_kwargs`` as sent: Ray Data
    hands a row's nested lists back as numpy arrays (the message parts of a shot), which the
    request model would refuse; this subclass turns them back into lists first."""
    from pydantic import model_validator

    class Plain(base):  # type: ignore[misc, valid-type]
        @model_validator(mode="before")
        @classmethod
        def _plain(cls, data: Any) -> Any:
            return to_plain(data)

    Plain.__name__ = Plain.__qualname__ = base.__name__
    return Plain
