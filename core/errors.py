"""User-facing errors: one clear message, a non-zero exit code, nothing half-written."""

from __future__ import annotations

import errno
import re
from typing import Iterator


class VismemError(Exception):
    """An error caused by the user's input or environment (not a bug).

    The CLI prints ``str(err)`` on one line and exits with ``exit_code``.
    """

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(VismemError):
    """An invalid run configuration (exit code 2, like argparse usage errors)."""

    exit_code = 2


class StoreError(VismemError):
    """The object store is unusable: bad URI, unreachable endpoint, missing credentials."""

    exit_code = 3


class TooLarge(StoreError):
    """A store object past its size bound (``vismem.core.bounds``), refused before it is read;
    ``size`` is the object's size when known (a cache compares it with its record)."""

    def __init__(self, message: str, *, size: int | None = None, exit_code: int | None = None) -> None:
        super().__init__(message, exit_code=exit_code)
        self.size = size


class StoreUnreachable(StoreError):
    """The store stopped answering during a run (its S3 server died, the network went away)."""


class NoSpace(StoreError):
    """A write failed for lack of space (``ENOSPC``/``EDQUOT``): the message names what was written."""


#: errno values that mean "the disk (or the quota) is full".
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def no_space(err: BaseException, what: object) -> "NoSpace | None":
    """``NoSpace`` naming ``what`` when ``err`` is an ``OSError`` for lack of space, else None."""
    if isinstance(err, OSError) and err.errno in NO_SPACE_ERRNOS:
        return NoSpace(f"no space left on device writing {what}")
    return None


class DataError(VismemError):
    """Malformed input data; the message names the file, the record and the field."""

    exit_code = 4


def did_you_mean(name: object, known: "list[str] | tuple[str, ...]") -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to a mistyped ``name`` (empty if none)."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def error_chain(err: BaseException) -> Iterator[BaseException]:
    """``err`` and every error behind it (``__cause__``, ``__context__``, a Ray error's ``cause``),
    each once -- a chain can loop back on itself."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__, getattr(e, "cause", None)]


def user_error(err: BaseException) -> VismemError | None:
    """The ``VismemError`` behind ``err`` (itself, a cause, or one a Ray worker raised), else None.

    Also ``NoSpace`` for an ``OSError`` of a full disk anywhere in the chain. Ray Data keeps only
    a worker's formatted traceback (``UserCodeException``): the error's class and message are
    recovered from its last ``vismem.core.errors.<Class>: message`` line, so the CLI still prints
    one line and exits with that kind's code.
    """
    for e in error_chain(err):
        if isinstance(e, VismemError):
            return e
        full = no_space(e, getattr(e, "filename", None) or "a file")
        if full is not None:
            return full
    text = str(err)
    found = re.findall(r"core\.errors\.(\w+): (.+)", text)
    if found:
        cls = globals().get(found[-1][0])
        if isinstance(cls, type) and issubclass(cls, VismemError):
            return cls(found[-1][1].strip())
    full_disk = re.search(r"\[Errno (?:%s)\] [^\n]*?(?:: '([^'\n]+)')?$" % "|".join(map(str, NO_SPACE_ERRNOS)),
                          text, re.M)
    if full_disk:
        return NoSpace(f"no space left on device writing {full_disk.group(1) or 'a file'}")
    return None
