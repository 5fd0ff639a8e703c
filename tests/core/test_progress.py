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


def test_off_a_terminal_track_prints_count_elapsed_and_eta_lines(monkeypatch, capsys):
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    monkeypatch.delenv(progress.DRIVER_VAR, raising=False)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    assert list(progress.track(range(4), "judging", total=4)) == [0, 1, 2, 3]
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == ""  # stdout stays clean for summaries and --json
    assert "judging: started (4 to do)" in lines[0]
    assert "judging: 2/4 (50 %)" in lines[2] and "ETA" in lines[2]
    assert "judging: 4 done in" in lines[-1] and len(lines) == 5


def test_stage_lines_and_silence(monkeypatch, capsys):
    monkeypatch.delenv(progress.DRIVER_VAR, raising=False)
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    progress.stage_started("encode", 2, 5)
    progress.stage_finished("encode", "done", 75.0, 2, 5)
    err = capsys.readouterr().err
    assert "stage 2/5 encode: started" in err and "stage 2/5 encode: done in 1 min 15 s" in err
    monkeypatch.setenv("VISMEM_PROGRESS", "0")
    progress.stage_started("encode", 2, 5)
    assert list(progress.track(range(3), "x", total=3)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_for_run_respects_vismem_progress_0_and_restores_the_caller_settings(monkeypatch, capsys):
    import os

    monkeypatch.setenv("VISMEM_PROGRESS", "0")
    monkeypatch.delenv(progress.DRIVER_VAR, raising=False)
    restore = progress.for_run(True)
    assert os.environ["VISMEM_PROGRESS"] == "0" and not progress.lines_enabled()
    restore()
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    restore = progress.for_run(True)
    assert progress.lines_enabled()  # the driver prints lines
    monkeypatch.setenv(progress.DRIVER_VAR, str(os.getpid() + 1))
    assert not progress.lines_enabled()  # a Ray worker inheriting the driver's environment does not
    restore()
    assert os.environ["VISMEM_PROGRESS"] == "1" and progress.DRIVER_VAR not in os.environ
