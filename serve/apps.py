"""Ray Serve applications that host vismem's models behind the OpenAI-compatible HTTP API.

- :func:`model_app` (``import_path: vismem.serve.apps:model_app`` in a Serve config file): one
  deployment, :data:`vismem.serve.deploy.DEPLOYMENT_NAME`, hosting any registered VLM (``/v1/chat/completions``)
  and/or embedder (``/v1/embeddings``), built on each replica from its ``{"name", "args"}`` spec
  — a scripted stand-in, MiniLM, a local transformers model, an embedder on a GPU. Clients are
  the ``openai`` VLM and ``openai-embed`` embedder backends, exactly as against vLLM.
- vLLM models go through Ray's own builder (``ray.serve.llm:build_openai_app``), behind
  :func:`llm_app` (which expands the weights paths on the cluster) in the config files of
  :mod:`vismem.serve.deploy`; :func:`build_llm_app` is the same in code (cluster only).

The config files are made by :func:`vismem.serve.deploy.serve_config` (``vismem serve up|config``,
``python -m vismem.serve.apps MODEL ...`` prints one for ``serve deploy`` / ``serve run``).
Ray is imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import asyncio
from typing import Any

from vismem.serve.build import build_embedder, build_vlm
from vismem.serve.deploy import DEPLOYMENT_NAME, llm_app_args, llm_config, serve_config
from vismem.serve.hosting import deployable
from vismem.serve.openai_server import chat_completions, embeddings, models_list
from vismem.serve.registry import registered
from vismem.serve.versions import stack_versions
from vismem.serve.weights import DEFAULT_ROOT, expand_on_node, node_model_source


class OpenAIModelServer:
    """The Ray Serve deployment class (plain Python; wrapped by ``serve.deployment`` at build time).

    Dispatches on the request path, so it serves under any route prefix. Model calls run in a
    worker thread so one replica overlaps requests (the backends are thread-safe).
    ``/v1/models`` also says what is hosted (``vismem: {kind, stand_in, dim, versions}``), so a
    run that names the deployment learns whether it reaches a stand-in, and on what stack.
    """

    def __init__(self, vlm_spec: dict[str, Any] | None = None, embedder_spec: dict[str, Any] | None = None,
                 model_id: str | None = None) -> None:
        self.vlm = build_vlm(vlm_spec) if vlm_spec else None
        self.embedder = build_embedder(embedder_spec) if embedder_spec else None
        if self.vlm is None and self.embedder is None:
            raise ValueError("OpenAIModelServer needs a vlm_spec, an embedder_spec, or both")
        self.model_id = model_id or (self.vlm.name if self.vlm is not None else self.embedder.name)
        hosted = [m for m in (self.vlm, self.embedder) if m is not None]
        self.meta: dict[str, Any] = {
            "kind": "+".join(k for k, m in (("vlm", self.vlm), ("embedder", self.embedder)) if m is not None),
            "stand_in": any(bool(getattr(m, "stand_in", False)) for m in hosted)}
        if self.embedder is not None:
            try:
                self.meta["dim"] = int(self.embedder.dim)
            except Exception:  # noqa: BLE001 - a lazily probed dim is optional metadata
                pass
        self.meta["versions"] = stack_versions()  # this replica's vLLM / torch / CUDA, for manifests

    def models(self) -> dict[str, Any]:
        """The ``/v1/models`` body: the one served id, with what it is."""
        body = models_list(self.model_id)
        body["data"][0]["vismem"] = dict(self.meta)
        return body

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        path = request.url.path.rstrip("/")
        if request.method == "GET" and path.endswith("/health"):
            return JSONResponse({"status": "ok", "model": self.model_id})
        if request.method == "GET" and path.endswith("/v1/models"):
            return JSONResponse(self.models())
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
                    model_id: str | None = None, name: str = DEPLOYMENT_NAME, num_replicas: int | None = None,
                    num_cpus: float = 1.0, num_gpus: float = 0.0, max_ongoing_requests: int = 16):
    """A bound Ray Serve application hosting the given VLM and/or embedder spec.

    Resources given here are defaults: a Serve config file's ``deployments`` entry for
    :data:`DEPLOYMENT_NAME` (autoscaling, ``ray_actor_options``) overrides them.
    """
    from ray import serve

    opts: dict[str, Any] = {"max_ongoing_requests": max_ongoing_requests,
                            "ray_actor_options": {"num_cpus": num_cpus, "num_gpus": num_gpus}}
    if num_replicas is not None:
        opts["num_replicas"] = num_replicas
    deployment = serve.deployment(OpenAIModelServer, name=name).options(**opts)
    return deployment.bind(vlm_spec, embedder_spec, model_id)


def model_app(args: dict[str, Any]):
    """Serve application builder for config files: ``args: {vlm_spec?, embedder_spec?, model_id}``.

    The deployment starts at the smallest footprint; the config's ``deployments`` entry sets
    its real resources, replicas and autoscaling.
    """
    unknown = set(args) - {"vlm_spec", "embedder_spec", "model_id"}
    if unknown:
        raise ValueError(f"vismem.serve.apps:model_app: unknown args {sorted(unknown)}")
    # Built on the cluster: ${VAR} and ~ in the specs (model paths) follow the cluster's settings.
    vlm, emb = (expand_on_node(args[k]) if args.get(k) else None for k in ("vlm_spec", "embedder_spec"))
    return build_model_app(vlm, emb, model_id=args.get("model_id"), num_cpus=0.25)


def node_llm_configs(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``configs`` (LLMConfig dicts) with each ``model_source`` path expanded here, on the cluster."""
    out = []
    for c in configs:
        loading = dict(c.get("model_loading_config") or {})
        if isinstance(loading.get("model_source"), str):
            loading["model_source"] = node_model_source(loading["model_source"])
        out.append({**c, "model_loading_config": loading})
    return out


def llm_app(args: dict[str, Any]):
    """Serve application builder of the vLLM gateway (``import_path: vismem.serve.apps:llm_app``):
    Ray's ``build_openai_app`` with every weights path expanded on the cluster."""
    from ray.serve.llm import build_openai_app

    return build_openai_app({**args, "llm_configs": node_llm_configs(list(args.get("llm_configs") or []))})


def build_llm_app(models: list[str], weights: str = DEFAULT_ROOT):
    """An OpenAI-compatible vLLM app (``ray.serve.llm.build_openai_app``) for named model specs
    whose ``deploy.engine`` is ``vllm``, loading from weights root ``weights``. Cluster only:
    ``ray.serve.llm`` needs vLLM (``ray[llm]``)."""
    import importlib.util

    names = registered()
    ds = [deployable(m, names) for m in models]
    configs = node_llm_configs([llm_config(d, weights) for d in ds])
    try:
        if importlib.util.find_spec("vllm") is None:  # fail fast: ray.serve.llm's import is slow
            raise ImportError("No module named 'vllm'")
        from ray.serve.llm import LLMConfig, build_openai_app
    except ImportError as e:
        raise ImportError(f"ray.serve.llm needs vLLM (install the 'gpu' extra on the cluster): {e}") from e
    return build_openai_app(llm_app_args([LLMConfig(**c) for c in configs],
                                         cpu=all(d.settings.device == "cpu" for d in ds)))


def run_app(app: Any, *, name: str = "vismem-model", route_prefix: str = "/", host: str = "127.0.0.1",
            port: int = 8000) -> str:
    """In code (tests, notebooks): start Serve's HTTP proxy on ``host:port`` if not running,
    deploy ``app`` and return its OpenAI base URL (``http://host:port<prefix>/v1``). Ray must
    already be initialised. Deployments that outlive the caller go through config files
    (``vismem serve up``)."""
    from ray import serve

    serve.start(http_options={"host": host, "port": port})
    serve.run(app, name=name, route_prefix=route_prefix, blocking=False)
    return f"http://{host}:{port}{route_prefix.rstrip('/')}/v1"


def main(argv: list[str] | None = None) -> int:
    """``python -m vismem.serve.apps MODEL [MODEL ...]``: print the Serve config file that deploys the
    named models (for ``serve deploy FILE`` / ``serve run FILE``; ``vismem serve up`` deploys it)."""
    import argparse
    import sys

    import yaml

    from vismem.core.errors import ConfigError

    p = argparse.ArgumentParser(prog="python -m vismem.serve.apps", description=main.__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", help="model variants (serve/models/*.yaml) or registered names")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    a = p.parse_args(argv)
    try:
        cfg = serve_config(a.models, host=a.host, port=a.port)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    sys.stdout.write(yaml.safe_dump(cfg, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
