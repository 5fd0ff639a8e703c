"""Ray Serve applications that host vismem's models behind the OpenAI-compatible HTTP API.

- :func:`build_model_app`: one deployment hosting any registered VLM (``/v1/chat/completions``)
  and/or embedder (``/v1/embeddings``), built on each replica from its ``{"name", "args"}`` spec
  — the scripted stand-in, a local transformers model, an embedder on a GPU. Clients are the
  ``openai`` VLM and ``openai-embed`` embedder backends, exactly as against vLLM.
- :func:`build_llm_app`: vLLM through ``ray.serve.llm`` (``LLMConfig`` + ``build_openai_app``)
  for the model specs whose ``deploy.engine`` is ``vllm``; imported lazily (cluster only).

Ray is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import asyncio
from typing import Any

from serve.openai_server import chat_completions, embeddings, models_list


class OpenAIModelServer:
    """The Ray Serve deployment class (plain Python; wrapped by ``serve.deployment`` at build time).

    Dispatches on the request path, so it serves under any route prefix. Model calls run in a
    worker thread so one replica overlaps requests (the backends are thread-safe).
    """

    def __init__(self, vlm_spec: dict[str, Any] | None = None, embedder_spec: dict[str, Any] | None = None,
                 model_id: str | None = None) -> None:
        from serve.embed import build_embedder
        from serve.vlm import build_vlm

        self.vlm = build_vlm(vlm_spec) if vlm_spec else None
        self.embedder = build_embedder(embedder_spec) if embedder_spec else None
        if self.vlm is None and self.embedder is None:
            raise ValueError("OpenAIModelServer needs a vlm_spec, an embedder_spec, or both")
        self.model_id = model_id or (self.vlm.name if self.vlm is not None else self.embedder.name)

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        path = request.url.path.rstrip("/")
        if request.method == "GET" and path.endswith("/health"):
            return JSONResponse({"status": "ok", "model": self.model_id})
        if request.method == "GET" and path.endswith("/v1/models"):
            return JSONResponse(models_list(self.model_id))
        if request.method == "POST" and path.endswith(("/v1/chat/completions", "/v1/embeddings")):
            try:
                body = await request.json()
            except ValueError:
                body = None
            handler, backend = ((chat_completions, self.vlm) if path.endswith("/chat/completions")
                                else (embeddings, self.embedder))
            status, content = await asyncio.to_thread(handler, backend, body, self.model_id)
            return JSONResponse(content, status_code=status)
        return JSONResponse({"error": {"message": f"no route {request.method} {path}", "type": "not_found"}},
                            status_code=404)


def build_model_app(vlm_spec: dict[str, Any] | None = None, embedder_spec: dict[str, Any] | None = None, *,
                    model_id: str | None = None, name: str = "vismem-model", num_replicas: int = 1,
                    num_cpus: float = 1.0, num_gpus: float = 0.0, max_ongoing_requests: int = 16):
    """A bound Ray Serve application hosting the given VLM and/or embedder spec."""
    from ray import serve

    deployment = serve.deployment(OpenAIModelServer, name=name).options(
        num_replicas=num_replicas, max_ongoing_requests=max_ongoing_requests,
        ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus})
    return deployment.bind(vlm_spec, embedder_spec, model_id)


def build_model_app_from_spec(model: str, **kwargs: Any):
    """:func:`build_model_app` for a named model spec (``serve/models/<model>.yaml``); resource
    hints come from its ``deploy`` block unless given."""
    from serve.models import load_model_spec

    spec = load_model_spec(model)
    deploy = spec.deploy or {}
    kwargs.setdefault("num_gpus", float(deploy.get("num_gpus", 0.0)))
    kwargs.setdefault("num_replicas", int(deploy.get("num_replicas", 1)))
    kwargs.setdefault("name", model)
    if spec.kind == "vlm":
        return build_model_app(spec.spec, None, **kwargs)
    return build_model_app(None, spec.spec, **kwargs)


def llm_config_dict(model: str, *, min_replicas: int | None = None, max_replicas: int | None = None) -> dict[str, Any]:
    """The ``ray.serve.llm.LLMConfig`` fields for a model spec with ``deploy.engine: vllm`` (pure)."""
    from serve.models import load_model_spec

    spec = load_model_spec(model)
    deploy = spec.deploy or {}
    if deploy.get("engine") != "vllm":
        raise ValueError(f"model {model!r} is not deployed with vLLM (deploy.engine={deploy.get('engine')!r})")
    n = int(deploy.get("num_replicas", 1))
    cfg: dict[str, Any] = {
        # The served id is what the ``openai`` client sends as ``model``, so the two always agree.
        "model_loading_config": {"model_id": spec.args["model"], "model_source": deploy.get("model_source", spec.args["model"])},
        "engine_kwargs": dict(deploy.get("engine_kwargs") or {}),
        "deployment_config": {"autoscaling_config": {"min_replicas": min_replicas or n,
                                                     "max_replicas": max_replicas or n}},
    }
    if deploy.get("accelerator_type"):
        cfg["accelerator_type"] = deploy["accelerator_type"]
    return cfg


def build_llm_app(models: list[str], **kwargs: Any):
    """An OpenAI-compatible vLLM app (``ray.serve.llm.build_openai_app``) for named model specs.
    Cluster only: ``ray.serve.llm`` needs vLLM, which the local environment does not have."""
    import importlib.util

    try:
        if importlib.util.find_spec("vllm") is None:  # fail fast: ray.serve.llm's import is slow
            raise ImportError("No module named 'vllm'")
        from ray.serve.llm import LLMConfig, build_openai_app
    except ImportError as e:
        raise ImportError(f"ray.serve.llm needs vLLM (install the 'gpu' extra on the cluster): {e}") from e
    configs = [LLMConfig(**llm_config_dict(m, **kwargs)) for m in models]
    return build_openai_app({"llm_configs": configs})


def llm_app_builder(args: dict[str, Any]):
    """Serve config builder (``import_path: serve.apps:llm_app_builder``, ``args: {models: [...]}``),
    the entry point of ``infra/kuberay/rayservice.yaml``."""
    models = args.get("models")
    if not models:
        raise ValueError("llm_app_builder needs args.models: a list of model spec names (serve/models/*.yaml)")
    return build_llm_app(list(models))


def run_app(app: Any, *, name: str = "vismem-model", route_prefix: str = "/", host: str = "127.0.0.1",
            port: int = 8000) -> str:
    """Start Serve's HTTP proxy on ``host:port`` (if not running), deploy ``app`` and return its
    OpenAI base URL (``http://host:port<prefix>/v1``). Ray must already be initialised."""
    from ray import serve

    serve.start(http_options={"host": host, "port": port})
    serve.run(app, name=name, route_prefix=route_prefix, blocking=False)
    return f"http://{host}:{port}{route_prefix.rstrip('/')}/v1"


def main(argv: list[str] | None = None) -> int:
    """``python -m serve.apps MODEL [MODEL ...]``: deploy named model specs on a Ray cluster.

    vLLM specs (``deploy.engine: vllm``) go through ``ray.serve.llm`` as one OpenAI app; others
    (embedders, transformers, scripted) each get an :class:`OpenAIModelServer` under ``/<name>``.
    """
    import argparse
    import time

    import ray

    from serve.models import load_model_spec

    p = argparse.ArgumentParser(prog="python -m serve.apps", description=main.__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", help="model spec names (serve/models/*.yaml)")
    p.add_argument("--address", default="auto", help="Ray address ('local' starts one here)")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    a = p.parse_args(argv)
    ray.init(address=None if a.address == "local" else a.address)
    llm = [m for m in a.models if (load_model_spec(m).deploy or {}).get("engine") == "vllm"]
    if llm:
        print("vLLM:", run_app(build_llm_app(llm), name="vismem-llm", host=a.host, port=a.port), flush=True)
    for m in a.models:
        if m not in llm:
            url = run_app(build_model_app_from_spec(m), name=m, route_prefix=f"/{m}", host=a.host, port=a.port)
            print(f"{m}: {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
