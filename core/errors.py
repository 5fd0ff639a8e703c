"""User-facing errors: one clear message, a non-zero exit code, nothing half-written."""

from __future__ import annotations


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


class DataError(VismemError):
    """Malformed input data; the message names the file, the record and the field."""

    exit_code = 4


def did_you_mean(name: object, known: "list[str] | tuple[str, ...]") -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known`` to a mistyped ``name`` (empty if none)."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
