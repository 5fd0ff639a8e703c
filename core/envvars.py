"""Numbers and URLs read from environment variables, bounded like any other input.

``int(os.environ["X"])`` turns ``X=abc`` into a traceback and ``X=10**9`` into a billion
threads; :func:`env_int` gives a one-line :class:`~vismem.core.errors.ConfigError` (exit 2)
naming the variable, what it got and its bounds. Every variable and bound is in ``docs/bounds.md``.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from vismem.core.errors import ConfigError

__all__ = ["env_http_url", "env_int"]


def env_int(name: str, default: int, *, lo: int, hi: int) -> int:
    """``$name`` as an integer in ``[lo, hi]`` (``default`` when unset or empty)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        if len(raw) > 20:  # past int64: refuse before converting
            raise ValueError
        value = int(raw)
    except ValueError:
        raise ConfigError(f"environment variable {name}={raw[:40]!r} is not an integer "
                          f"(allowed: {lo} to {hi})") from None
    if not lo <= value <= hi:
        raise ConfigError(f"environment variable {name}={value} is out of bounds (allowed: {lo} to {hi})")
    return value


def env_http_url(name: str) -> str:
    """``$name`` as an http(s) base URL without a trailing slash ("" when unset); any other
    scheme (``file:``, ``ftp:``) is a ConfigError -- urllib would open a local file for it."""
    raw = os.environ.get(name, "").strip().rstrip("/")
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(raw) > 2048:
        raise ConfigError(f"environment variable {name} must be an http(s) URL of at most 2,048 characters, "
                          f"got {raw[:60]!r}")
    return raw
