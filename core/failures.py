"""The one rule for units of work whose model calls failed: past a threshold, the unit failed.

A unit (an encoding session, a probe unit) makes many model calls; each call that still fails
after the backend's retries is recorded in the unit's rows. When more than ``limit`` (a share,
``encode.max_failed_calls`` / ``probes.max_failed_calls``) of them failed, the unit's result says
nothing about the model — it records an outage — so it must not be committed to a cache:
:func:`check_failed_calls` raises :class:`UnitFailed`, the job reports the unit as failed (no done
marker), the stage ends ``partial`` and a re-run retries it.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

#: Replies longer than this (characters) are cut where they are stored; the row says so.
REPLY_CAP = 64 * 1024


class UnitFailed(RuntimeError):
    """A unit of work failed as a whole (too many failed calls); its message says how and why."""


def reason_counts(errors: Iterable[str | None], top: int = 3) -> str:
    """``"http_500 x25, timeout x2"``: the most common error kinds (text before the first ``:``)."""
    kinds = Counter(str(e).split(":", 1)[0].strip() or "error" for e in errors if e)
    return ", ".join(f"{k} x{n}" for k, n in kinds.most_common(top)) or "no error text"


def check_failed_calls(failed: int, total: int, errors: Iterable[str | None], *, limit: float, field: str,
                       what: str = "model calls") -> None:
    """Raise :class:`UnitFailed` when ``failed / total`` exceeds ``limit`` (nothing when ``total`` is 0)."""
    if total and failed / total > limit:
        errs = [e for e in errors if e]
        first = f"; first: {errs[0][:200]}" if errs else ""
        raise UnitFailed(f"{failed} of {total} {what} failed (more than {limit:.0%} allowed by {field}): "
                         f"{reason_counts(errs)}{first}")


def cap_text(text: str | None, cap: int = REPLY_CAP) -> tuple[str | None, bool]:
    """``(text cut to cap characters, whether it was cut)``."""
    if text is None or len(text) <= cap:
        return text, False
    return text[:cap], True


def shorten(text: str, cap: int, dots: str = "…") -> str:
    """``text`` cut to ``cap`` characters with a note of how many were left out (for display and
    stored excerpts; :func:`cap_text` is the plain cut that also says whether it cut)."""
    if len(text) <= cap:
        return text
    return text[:cap] + f"{dots} [{len(text) - cap} more characters]"


def failure_line(errors: list[str], total: int, unit: str) -> str:
    """``"2 of 14 sessions failed, e.g. 25 of 25 model calls failed (...)"``:
    a stage's one-line verdict on its failed units (``errors``: one message per failed unit)."""
    example = f", e.g. {errors[0][:300]}" if errors else ""
    return f"{len(errors)} of {total} {unit} failed{example}"
