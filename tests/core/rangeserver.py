"""A loopback HTTP server with ``Range`` support, serving files from a folder (test helper)."""

from __future__ import annotations

import contextlib
import http.server
import threading
from pathlib import Path


def make_handler(root: Path, log: list[dict], *, ignore_range: bool = False, cut_after: int | None = None):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_GET(self):
            path = root / self.path.lstrip("/")
            rng = self.headers.get("Range")
            log.append({"path": self.path, "range": rng})
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            start = 0
            if rng and not ignore_range:
                start = int(rng.split("=")[1].split("-")[0])
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body if cut_after is None else body[:cut_after])

    return Handler


@contextlib.contextmanager
def serve(root: Path, **kw):
    """Yield ``(base_url, request_log)`` of a server on 127.0.0.1 for the block."""
    log: list[dict] = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, log, **kw))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", log
    finally:
        srv.shutdown()
        srv.server_close()


def build_mirror(data_dir: Path, dest: Path, names: tuple[str, ...] = ("locomo", "dmv-bench")) -> Path:
    """A ``VISMEM_DATA_MIRROR`` folder (``<dataset>/<file>``) of the pinned files, copied from ``data_dir``."""
    import shutil

    from vismem.pipelines.datafetch import DATASETS

    for name in names:
        for f in DATASETS[name].files:
            (dest / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_dir / f.path, dest / name / Path(f.path).name)
    return dest
