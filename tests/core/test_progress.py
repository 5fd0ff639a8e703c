"""Progress bars: shown on a terminal, silent (and transparent) otherwise."""

from __future__ import annotations

import io
import sys

from vismem.core import progress


def test_track_is_transparent_when_disabled(monkeypatch):
    monkeypatch.setenv("VISMEM_PROGRESS", "0")
    assert list(progress.track(iter(range(5)), "x", total=5)) == [0, 1, 2, 3, 4]


class _TTY(io.StringIO):
    def isatty(self):
        return True


def tty_stderr(monkeypatch) -> io.StringIO:
    """stderr a terminal (rich draws bars), progress on; what was drawn. Called in the test body:
    pytest's capture sets sys.stderr again between a fixture's set-up and the test."""
    err = _TTY()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    return err


def test_track_draws_a_bar_on_a_terminal(monkeypatch):
    err = tty_stderr(monkeypatch)
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


def test_a_loop_waiting_on_its_first_item_still_prints_lines(monkeypatch, capsys):
    """Issue 43: the heartbeat prints the count and elapsed time while no item finishes (a Ray
    job whose actors are still loading their models), and the end line once they do."""
    import time

    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    monkeypatch.delenv(progress.DRIVER_VAR, raising=False)
    monkeypatch.setattr(progress, "EVERY_S", 0.05)

    def slow():
        time.sleep(0.4)
        yield from range(3)

    with progress.watch() as heard:
        assert list(progress.track(slow(), "reading", total=3)) == [0, 1, 2]
    lines = [m for _, m in heard.lines]
    assert lines[0] == "reading: started (3 to do)" and lines[-1].startswith("reading: 3 done in")
    waiting = [m for m in lines if m.startswith("reading: 0/3 (0 %)")]
    assert len(waiting) >= 3 and all("elapsed" in m and "ETA" not in m for m in waiting)
    assert heard.longest()[0] < 0.4  # never silent for the whole wait
    assert capsys.readouterr().err.count("reading: 0/3") == len(waiting)


def test_a_step_prints_its_start_elapsed_and_end_and_a_fake_clock_measures_silence(monkeypatch, capsys):
    import time

    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    monkeypatch.delenv(progress.DRIVER_VAR, raising=False)
    monkeypatch.setattr(progress, "EVERY_S", 0.05)
    with progress.watch() as heard:
        with progress.step("loading a model"):
            time.sleep(0.3)
    lines = [m for _, m in heard.lines]
    assert lines[0] == "loading a model: started" and lines[-1].startswith("loading a model: done in")
    assert any(m.startswith("loading a model: ") and m.endswith("elapsed") for m in lines[1:-1])
    # Silence by the module's clock (a test may drive it): two lines 30 "seconds" apart.
    now = iter([100.0, 130.0, 131.0])
    monkeypatch.setattr(progress, "clock", lambda: next(now))
    with progress.watch() as heard:
        progress.note("a")
        progress.note("b")
        progress.note("c")
    assert heard.longest() == (30.0, "a", "b")
    capsys.readouterr()


def test_nested_loops_and_steps_share_one_bar_on_a_terminal(monkeypatch):
    """rich allows one live display per console: an inner loop or a step inside a loop adds a
    row to the outer bar instead of failing."""
    err = tty_stderr(monkeypatch)
    out = []
    for i in progress.track(range(2), "conversations", total=2):
        with progress.step("loading"):
            out += list(progress.track(range(3), "shots", total=3))
    assert out == [0, 1, 2, 0, 1, 2] and "conversations" in err.getvalue() and not progress._BARS
