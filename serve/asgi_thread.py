"""Serving an ASGI app with uvicorn on a background thread, on a socket bound before start.

Shared by the local OpenAI-compatible server and the storefront: binding first (port 0 → a
free port) leaves no race between choosing a port and listening on it.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound listening socket; port 0 picks a free port with no bind race."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class ThreadedASGIServer:
    """``with ThreadedASGIServer(app) as srv: srv.port`` — uvicorn in a daemon thread."""

    thread_name = "asgi"

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app, self.host, self.port = app, host, port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    def start(self, timeout_s: float = 20.0) -> "ThreadedASGIServer":
        import uvicorn

        self._sock = bind_socket(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # the thread is not the main thread
        # Server.run (not asyncio.run(serve())) so uvicorn picks its fast loop (uvloop) as configured.
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name=f"{self.thread_name}:{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.thread_name} server on {self.host}:{self.port} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = self._sock = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
