"""Progress bars: shown on a terminal, silent (and transparent) otherwise."""

from __future__ import annotations

import io
import sys

from vismem.core import progress


def test_track_is_transparent_when_disabled(monkeypatch):
    monkeypatch.setenv("VISMEM_PROGRESS", "0")
    assert list(progress.track(iter(range(5)), "x", total=5)) == [0, 1, 2, 3, 4]


def test_track_draws_a_bar_on_a_terminal(monkeypatch):
    class TTY(io.StringIO):
        def isatty(self):
            return True

    err = TTY()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    assert list(progress.track(range(3), "judging", total=3)) == [0, 1, 2]
    assert "judging" in err.getvalue() and "3/3" in err.getvalue()
