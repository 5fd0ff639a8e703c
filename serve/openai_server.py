"""A local OpenAI-compatible server (FastAPI + uvicorn on loopback) for any registered backend.

``/v1/chat/completions`` serves a :class:`vismem.serve.vlm.VLM` (data-URL images decoded back into
bytes; requests in any message layout of :mod:`vismem.serve.layouts` parse, a message's text parts
joined by ``"\n\n"``, so the hosted backend reads what the layout's model view promises),
``/v1/embeddings`` an optional :class:`vismem.serve.embed.Embedder`, plus ``/v1/models`` and
``/health``. In process::

    with LocalOpenAIServer(vlm=build_vlm("scripted")) as srv:   # vismem.serve.build
        client = build_vlm({"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url}})

or as a process::

    python -m vismem.serve.openai_server --backend scripted --args '{"replies": ["hi"]}' [--port 0]

Backend exceptions with an ``http_status`` attribute (the scripted backend's injected faults)
become that status code; any other exception is a 500 with the error text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from typing import Any

from fastapi import Request  # module level: FastAPI resolves the handlers' string annotations here

from vismem.core.errors import VismemError
from vismem.serve.asgi_thread import ThreadedASGIServer
from vismem.serve.embed import embed_queries
from vismem.serve.openai_format import completion_response, from_data_url, messages_from_openai

log = logging.getLogger(__name__)


def _err(status: int, message: str, kind: str = "server_error") -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind}}


def chat_completions(vlm: Any, body: Any, model_id: str) -> tuple[int, dict[str, Any]]:
    """Handle one ``/v1/chat/completions`` body → ``(status, json)``. Pure of any web framework,
    so the FastAPI app and the Ray Serve deployment answer identically."""
    if vlm is None:
        return _err(404, "this server hosts no chat model", "not_found")
    if not isinstance(body, dict):
        return _err(400, "request body must be a JSON object", "invalid_request_error")
    try:
        messages = messages_from_openai(body.get("messages") or [])
    except (ValueError, AttributeError, TypeError) as e:
        return _err(400, str(e), "invalid_request_error")
    if not messages:
        return _err(400, "messages must be a non-empty list", "invalid_request_error")
    if body.get("stream"):
        return _err(400, "stream=true is not supported", "invalid_request_error")
    try:
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 512)
        temperature = float(body.get("temperature") or 0.0)
    except (TypeError, ValueError) as e:
        return _err(400, f"bad max_tokens/temperature: {e}", "invalid_request_error")
    try:
        result = vlm.chat(messages, max_tokens=max_tokens, temperature=temperature)
    except Exception as e:  # noqa: BLE001 - every backend failure becomes an HTTP error
        return _err(int(getattr(e, "http_status", 500)), f"{type(e).__name__}: {e}")
    return 200, completion_response(result, body.get("model") or model_id)


def embeddings(embedder: Any, body: Any, model_id: str) -> tuple[int, dict[str, Any]]:
    """Handle one ``/v1/embeddings`` body. OpenAI's ``input`` (string or list of strings) plus a
    vismem extension: ``images`` (data URLs), each paired with ``input[i]`` when both are given;
    ``input_type: "query"`` embeds queries (instruction-aware models)."""
    if embedder is None:
        return _err(404, "this server hosts no embedder", "not_found")
    if not isinstance(body, dict):
        return _err(400, "request body must be a JSON object", "invalid_request_error")
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else texts
    images = body.get("images")
    try:
        if images:
            imgs = [from_data_url(str(u)) for u in images]
            vecs = embedder.embed_images(imgs, texts if texts else None)
        elif isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            if body.get("input_type") == "query":
                vecs = embed_queries(embedder, texts)
            else:
                vecs = embedder.embed_texts(texts)
        else:
            return _err(400, "input must be a string or a list of strings", "invalid_request_error")
    except ValueError as e:
        return _err(400, str(e), "invalid_request_error")
    except NotImplementedError as e:
        return _err(400, f"{embedder.name} cannot embed images: {e}", "invalid_request_error")
    except Exception as e:  # noqa: BLE001
        return _err(500, f"{type(e).__name__}: {e}")
    return 200, {"object": "list", "model": body.get("model") or model_id,
                 "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
                          for i, row in enumerate(vecs)],
                 "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def models_list(model_id: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "vismem"}]}


def create_app(vlm: Any = None, embedder: Any = None, *, model_id: str | None = None, capacity: Any = None):
    """The FastAPI app. ``model_id`` is what ``/v1/models`` lists (defaults to the backend name).

    ``capacity``: a :class:`vismem.serve.capacity.CapacityModel` (or a
    :class:`~vismem.serve.capacity.SimulatedFleet`) makes the chat route a simulated fleet: N
    slots, a service time per request, queueing beyond N, and ``GET /v1/stats`` (``POST
    /v1/stats/reset`` starts a new measurement). Without one the server answers as fast as the
    backend does and has no stats route."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    if vlm is None and embedder is None:
        raise ValueError("create_app needs a vlm, an embedder, or both")
    model_id = model_id or (vlm.name if vlm is not None else embedder.name)
    app = FastAPI(title="vismem OpenAI-compatible server")
    fleet = _fleet(capacity)

    async def _body(request: Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            return None

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": model_id}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return models_list(model_id)

    # The backend call runs in a worker thread, so a slow model never blocks the event loop.
    @app.post("/v1/chat/completions")
    async def chat_route(request: Request):
        body = await _body(request)
        if fleet is not None:
            status, content = await fleet.serve(body, lambda: chat_completions(vlm, body, model_id))
        else:
            status, content = await asyncio.to_thread(chat_completions, vlm, body, model_id)
        return JSONResponse(status_code=status, content=content)

    if fleet is not None:
        @app.get("/v1/stats")
        def stats() -> dict[str, Any]:
            return {**fleet.stats.snapshot(), "model": fleet.model.as_dict()}

        @app.post("/v1/stats/reset")
        def stats_reset() -> dict[str, Any]:
            fleet.stats.reset()
            return {"status": "reset"}

    @app.post("/v1/embeddings")
    async def embeddings_route(request: Request):
        body = await _body(request)
        status, content = await asyncio.to_thread(embeddings, embedder, body, model_id)
        return JSONResponse(status_code=status, content=content)

    app.state.fleet = fleet
    return app


def _fleet(capacity: Any) -> Any:
    if capacity is None:
        return None
    from vismem.serve.capacity import CapacityModel, SimulatedFleet

    if isinstance(capacity, SimulatedFleet):
        return capacity
    if isinstance(capacity, dict):
        capacity = CapacityModel(**capacity)
    if not isinstance(capacity, CapacityModel):
        raise TypeError(f"capacity must be a CapacityModel, a dict of its fields or a SimulatedFleet, "
                        f"got {type(capacity).__name__}")
    return SimulatedFleet(capacity)


class LocalOpenAIServer(ThreadedASGIServer):
    """Runs :func:`create_app` under uvicorn on a background thread (context manager)."""

    thread_name = "openai-server"

    def __init__(self, vlm: Any = None, embedder: Any = None, *, host: str = "127.0.0.1",
                 port: int = 0, model_id: str | None = None, app: Any = None, capacity: Any = None) -> None:
        # ``app``: serve any ASGI app instead (e.g. a deliberately broken upstream in tests).
        # ``capacity``: a simulated fleet (see create_app); ``self.fleet`` holds its stats.
        super().__init__(app if app is not None else create_app(vlm, embedder, model_id=model_id, capacity=capacity),
                         host=host, port=port)
        self.fleet = getattr(getattr(self.app, "state", None), "fleet", None)
        self.model_id = model_id or (vlm.name if vlm is not None else embedder.name if embedder else "app")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def main(argv: list[str] | None = None) -> int:
    """``python -m vismem.serve.openai_server``: serve one VLM (and/or embedder) until interrupted."""
    p = argparse.ArgumentParser(prog="python -m vismem.serve.openai_server", description=__doc__.splitlines()[0])
    p.add_argument("--backend", help="registered VLM backend name (e.g. scripted, transformers)")
    p.add_argument("--args", default="{}", help="JSON object of backend arguments")
    p.add_argument("--model-spec", help="a named model spec from serve/models (instead of --backend)")
    p.add_argument("--embedder", help="registered embedder name to serve on /v1/embeddings")
    p.add_argument("--embedder-args", default="{}", help="JSON object of embedder arguments")
    p.add_argument("--model-id", help="id listed by /v1/models (default: the backend's name)")
    p.add_argument("--capacity", help="JSON object of a simulated fleet's CapacityModel "
                   "(e.g. '{\"slots\": 64, \"base_s\": 0.4}'); adds GET /v1/stats")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    a = p.parse_args(argv)

    from vismem.serve.build import build_embedder, build_vlm

    vlm = embedder = None
    try:
        if a.model_spec:
            from vismem.serve.models import load_model_spec

            spec = load_model_spec(a.model_spec)
            if spec.kind == "vlm":
                vlm = build_vlm(spec.spec)
            else:
                embedder = build_embedder(spec.spec)
        elif a.backend:
            vlm = build_vlm({"name": a.backend, "args": json.loads(a.args)})
        if a.embedder:
            embedder = build_embedder({"name": a.embedder, "args": json.loads(a.embedder_args)})
        capacity = None
        if a.capacity:
            from vismem.serve.capacity import CapacityModel

            capacity = CapacityModel(**json.loads(a.capacity))
    except (KeyError, ValueError, TypeError, VismemError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if vlm is None and embedder is None:
        print("error: give --backend, --model-spec or --embedder", file=sys.stderr)
        return 2
    srv = LocalOpenAIServer(vlm, embedder, host=a.host, port=a.port, model_id=a.model_id,
                            capacity=capacity).start()
    print(f"serving {srv.model_id} on {srv.base_url}", flush=True)
    try:
        while srv._thread is not None and srv._thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
