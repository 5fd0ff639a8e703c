"""Content digests of input files, so run ids and caches follow what the data *is*, not where it lies.

A digest is the sha256 of the file's bytes. It is memoised per process by (path, size, mtime),
so asking for a run id many times reads each file once; a file rewritten in place gets a new
mtime and is read again.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

#: What :func:`file_digest` answers for a file that does not exist (the stage's check reports it).
MISSING = "missing"

_memo: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def file_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of the file's content, or :data:`MISSING`."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return MISSING
    if not p.is_file():
        return MISSING
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _memo.get(key)
    if hit is not None:
        return hit
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    out = f"sha256:{h.hexdigest()}"
    with _lock:
        _memo[key] = out
    return out


def clear_memo() -> None:
    """Forget memoised digests (tests that rewrite a file within one mtime tick)."""
    with _lock:
        _memo.clear()


__all__ = ["MISSING", "clear_memo", "file_digest"]
