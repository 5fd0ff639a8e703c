"""A loopback HTTP server with the Ray dashboard's Serve REST contract, for fast tests.

What `vismem serve` relies on, as Ray 2.60's ``serve_head`` and controller behave:
``GET /api/ray/version``; ``GET /api/serve/applications/`` (instance details: per app its
``deployed_app_config``, ``source``, ``status``, ``route_prefix``); ``PUT`` a ServeDeploySchema
(validated by Ray's own model; declarative apps left out of it are deleted, imperative ones kept,
a running instance keeps its HTTP options); ``DELETE`` shuts Serve down (every app goes).
``GET /api/v0/nodes`` and ``/nodes?view=summary`` list the cluster's nodes (``node_ips`` sets
their addresses);
``GET|PUT /api/packages/gcs/NAME`` takes runtime_env packages (kept in ``packages``).
Every request is recorded in ``calls``.

A concurrent writer is simulated with ``after``: ``after["GET"]`` runs (with the fake) once a
Serve GET's answer is taken, before it is sent (a write landing right after that read);
``after["PUT"]`` once a PUT is applied, before it is answered; either may call
:meth:`FakeServeDashboard.other_put` (another client's PUT, kept in ``other_puts``, not ``puts``).
``serve_gets`` counts the Serve GETs answered. With
``lingering_deletes`` an app a PUT leaves out stays ``DELETING`` without its config, as Ray
shows it until its replicas are gone.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class FakeServeDashboard:
    """``with FakeServeDashboard() as d: d.url``; ``d.apps`` is the running instance's state."""

    def __init__(self, node_ips: list[str] | None = None, *, lingering_deletes: bool = False) -> None:
        self.apps: dict[str, dict[str, Any]] = {}
        self.after: dict[str, Callable[["FakeServeDashboard"], None]] = {}
        self.serve_gets = 0
        self.lingering_deletes = lingering_deletes
        self.other_puts: list[dict[str, Any]] = []
        self.http_options: dict[str, Any] | None = None
        self.calls: list[tuple[str, str]] = []
        self.puts: list[dict[str, Any]] = []
        self.packages: dict[str, bytes] = {}  # runtime_env packages uploaded (/api/packages/gcs/NAME)
        self.node_ips = node_ips or ["127.0.0.1"]
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeServeDashboard":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_app(self, cfg: dict[str, Any], *, imperative: bool = False) -> None:
        """An application already running (a colleague's, a RayService's, a notebook's serve.run)."""
        self.http_options = self.http_options or {"host": "0.0.0.0", "port": 8123}
        self.apps[cfg["name"]] = self._details(cfg, imperative)

    @staticmethod
    def _details(cfg: dict[str, Any], imperative: bool) -> dict[str, Any]:
        return {"name": cfg["name"], "route_prefix": cfg.get("route_prefix", "/"), "status": "RUNNING",
                "message": "", "source": "imperative" if imperative else "declarative",
                "deployed_app_config": None if imperative else cfg, "deployments": {}}

    def body(self) -> dict[str, Any]:
        if not self.apps and self.http_options is None:
            return {"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": None}
        return {"controller_info": {"node_id": "head"}, "proxy_location": "EveryNode",
                "http_options": self.http_options, "proxies": {}, "applications": self.apps,
                "target_capacity": None}

    def put(self, cfg: dict[str, Any], *, record: bool = True) -> None:
        from ray.serve.schema import ServeDeploySchema

        ServeDeploySchema.model_validate(cfg)  # what the dashboard does first (400 otherwise)
        (self.puts if record else self.other_puts).append(cfg)
        if self.http_options is None:
            self.http_options = cfg.get("http_options") or {"host": "0.0.0.0", "port": 8000}
        named = {a["name"] for a in cfg["applications"]}
        for name in [n for n, a in self.apps.items() if a["source"] == "declarative" and n not in named]:
            if self.lingering_deletes:
                self.apps[name] = {**self.apps[name], "status": "DELETING", "deployed_app_config": None}
            else:
                del self.apps[name]
        for app in cfg["applications"]:
            self.apps[app["name"]] = self._details(app, False)

    def other_put(self, cfg: dict[str, Any]) -> None:
        """Another client's PUT (a colleague's `serve deploy`, a RayService reconcile)."""
        self.put(cfg, record=False)

    def deployed(self) -> list[dict[str, Any]]:
        """Every declarative application's config as deployed (what another writer would merge)."""
        return [a["deployed_app_config"] for a in self.apps.values() if a["deployed_app_config"] is not None]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, code: int, body: Any = None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                fake.calls.append(("GET", self.path))
                if self.path.startswith("/api/ray/version"):
                    self._send(200, {"version": "4", "ray_version": "2.60.0", "ray_commit": "x",
                                     "session_name": "fake"})
                elif self.path.startswith("/api/serve/applications/"):
                    body = json.loads(json.dumps(fake.body()))  # the answer as read now
                    fake.serve_gets += 1
                    if "GET" in fake.after:
                        fake.after["GET"](fake)
                    self._send(200, body)
                elif self.path.startswith("/api/packages/"):
                    self._send(200 if self.path.rsplit("/", 1)[-1] in fake.packages else 404, {})
                elif self.path.startswith("/api/v0/nodes"):  # Ray's state API (ray.util.state.list_nodes)
                    nodes = [{"node_id": f"n{i}", "node_ip": ip, "is_head_node": i == 0, "state": "ALIVE",
                              "state_message": None, "node_name": ip, "resources_total": {"CPU": 1.0},
                              "labels": {}, "start_time_ms": 0, "end_time_ms": 0}
                             for i, ip in enumerate(fake.node_ips)]
                    self._send(200, {"result": True, "msg": "", "data": {"result": {
                        "result": nodes, "total": len(nodes), "num_after_truncation": len(nodes),
                        "num_filtered": len(nodes), "partial_failure_warning": "", "warnings": None}}})
                elif self.path.startswith("/nodes"):
                    nodes = [{"raylet": {"nodeManagerAddress": ip, "state": "ALIVE", "isHeadNode": i == 0}}
                             for i, ip in enumerate(fake.node_ips)]
                    self._send(200, {"result": True, "msg": "", "data": {"summary": nodes}})
                else:
                    self._send(404, {"error": self.path})

            def do_PUT(self) -> None:
                fake.calls.append(("PUT", self.path))
                data = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/api/packages/"):
                    fake.packages[self.path.rsplit("/", 1)[-1]] = data
                    self._send(200)
                    return
                cfg = json.loads(data)
                try:
                    fake.put(cfg)
                except Exception as err:  # noqa: BLE001 - the dashboard answers 400 to a bad config
                    self._send(400, {"error": str(err)})
                    return
                if "PUT" in fake.after:
                    fake.after["PUT"](fake)
                self._send(200)

            def do_DELETE(self) -> None:
                fake.calls.append(("DELETE", self.path))
                fake.apps.clear()
                fake.http_options = None
                self._send(200)

        return Handler
