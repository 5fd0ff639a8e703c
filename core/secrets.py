"""Secrets in configs: which values are secret, and how they are kept out of what a run writes.

The rule, applied everywhere a config or a component spec leaves the process that holds it
(manifest, stage summaries, run logs, run ids and cache keys):

* a mapping entry is a secret when its name, split at ``_``/``-``/``.``, contains one of
  :data:`SECRET_WORDS` (``secret_key``, ``token``, ``password``, ...), or ``key`` beside one of
  :data:`KEY_QUALIFIERS` (``api_key``, ``access_key``, ``private_key``; a bare ``key`` or
  ``cache_key`` is an address, not a secret), unless it ends in ``_env``/``_var``/``_file`` (it
  then names where the secret lives, which is not itself a secret: ``api_key_env``);
* the user-info part of a URL (``http://USER:PASS@host``) is a secret.

Secrets are still passed to the component they configure at build time (the frozen config keeps
them); they are *redacted* (``***``) in manifests, summaries and logs, and *dropped* from
content hashes, so rotating a credential never changes a run id or invalidates a cache.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Mapping

#: Words that make a mapping key a secret (compared with the key's ``_``/``-``/``.`` parts).
SECRET_WORDS = frozenset({"secret", "token", "password", "passwd", "pwd", "credential", "credentials",
                          "apikey", "passphrase"})
#: Words that make ``key`` a secret beside them (``api_key``; but ``spec_key`` is an address).
KEY_QUALIFIERS = frozenset({"api", "access", "private", "secret", "auth", "session", "signing", "client",
                            "encryption", "account"})
#: Suffixes of keys that *name* where a secret lives (an environment variable), not the secret.
_NAME_SUFFIXES = ("env", "var", "file")
REDACTED = "***"
#: ``scheme://userinfo@`` in any string value.
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
#: Shorter values are not scrubbed from free text (too likely to match ordinary words).
_MIN_SCRUB_LEN = 6


def is_secret_name(name: Any) -> bool:
    """Whether a mapping key names a secret (see the module rule)."""
    parts = [p for p in re.split(r"[_\-.]", str(name).lower()) if p]
    if not parts or parts[-1] in _NAME_SUFFIXES:
        return False
    return any(p in SECRET_WORDS for p in parts) or ("key" in parts and any(p in KEY_QUALIFIERS for p in parts))


def strip_userinfo(text: str) -> str:
    """``http://user:pass@host/x`` → ``http://***@host/x`` (other text unchanged)."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (JSON-like) with every secret replaced by ``***`` (structure kept)."""
    if isinstance(obj, Mapping):
        return {k: (REDACTED if is_secret_name(k) and v not in (None, "") else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v) for v in obj) if isinstance(obj, tuple) else [redact(v) for v in obj]
    if isinstance(obj, str):
        return strip_userinfo(obj)
    return obj


def drop_secrets(obj: Any) -> Any:
    """A copy of ``obj`` without secret entries at all (for content hashes: a credential given or
    not, or rotated, hashes the same)."""
    if isinstance(obj, Mapping):
        return {k: drop_secrets(v) for k, v in obj.items() if not is_secret_name(k)}
    if isinstance(obj, (list, tuple)):
        return [drop_secrets(v) for v in obj]
    if isinstance(obj, str):
        return strip_userinfo(obj)
    return obj


def secret_values(obj: Any) -> set[str]:
    """Every secret string inside ``obj``: values of secret-named keys and URL user-info parts."""
    out: set[str] = set()

    def walk(o: Any, secret: bool) -> None:
        if isinstance(o, Mapping):
            for k, v in o.items():
                walk(v, secret or is_secret_name(k))
        elif isinstance(o, (list, tuple, set)):
            for v in o:
                walk(v, secret)
        elif isinstance(o, str):
            if secret and o:
                out.add(o)
            for m in _USERINFO.finditer(o):
                info = m.group("userinfo")
                out.add(info)
                out.update(p for p in info.split(":") if p)
        elif secret and isinstance(o, (int, float)) and not isinstance(o, bool):
            out.add(str(o))

    walk(obj, False)
    return {v for v in out if len(v) >= _MIN_SCRUB_LEN}


class Scrubber:
    """Replaces known secret values in free text (log lines, error messages) and in JSON-like
    objects (structural :func:`redact` plus value scrubbing)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values: list[str] = []
        self.add(values)

    def add(self, values: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self.values = sorted(set(self.values) | {v for v in values if v and len(v) >= _MIN_SCRUB_LEN},
                             key=len, reverse=True)

    def text(self, s: str) -> str:
        """``s`` with URL user-info and every known secret value replaced by ``***``."""
        return self.known(strip_userinfo(s))

    def known(self, s: str) -> str:
        """``s`` with only the known secret values replaced (other text, URLs included, kept as is:
        for a model's reply, which is a result)."""
        for v in self.values:
            if v in s:
                s = s.replace(v, REDACTED)
        return s

    def known_in(self, o: Any) -> Any:
        """A copy of JSON-like ``o`` with the known secret values cut from every string in it
        (as :meth:`known`; keys and structure kept): a raw reply read before any of it is cut
        short, so no secret is stored in part."""
        if not self.values:
            return o
        if isinstance(o, str):
            return self.known(o)
        if isinstance(o, Mapping):
            return {k: self.known_in(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [self.known_in(v) for v in o]
        return o

    def obj(self, o: Any) -> Any:
        o = redact(o)

        def walk(x: Any) -> Any:
            if isinstance(x, Mapping):
                return {k: walk(v) for k, v in x.items()}
            if isinstance(x, list):
                return [walk(v) for v in x]
            if isinstance(x, tuple):
                return tuple(walk(v) for v in x)
            return self.text(x) if isinstance(x, str) else x

        return walk(o) if self.values else o


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs secrets from a record's formatted message (and traceback)."""

    def __init__(self, scrubber: Scrubber) -> None:
        super().__init__()
        self.scrubber = scrubber

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = self.scrubber.text(msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrubber.text(record.exc_text)
        if clean != msg:
            record.msg, record.args = clean, None
        return True
