"""Lifelines: helper processes that must not outlive the process that started them.

A :class:`Lifeline` is a small watchdog process (this file, run by path with ``python -I``, stdlib
only) holding the read end of a pipe whose write end only its owner has. When the pipe closes —
the owner stopped it, exited, or was killed (``SIGKILL`` included: the kernel closes a dead
process's files) — the watchdog

1. ends its child command, if it was given one (``SIGTERM``, then ``SIGKILL`` after a grace), and
2. ends every process whose *initial environment* holds ``NAME=VALUE`` (``sweep_env``): a token
   the owner put into its environment before starting Ray, so every Ray process it started
   (GCS, raylet, agents, workers, and what they spawn) carries it and nothing else does -- and
   every process below those (one that renamed itself no longer shows the token);
3. removes the folder given with ``--remove``, if any (the temp dir those processes wrote to:
   nothing else would, once its owner is gone);

then exits. If the child exits first, the watchdog exits with its status (the owner sees it as
the child's death). Thread-independent, unlike ``PR_SET_PDEATHSIG``, and it works for a whole
process tree, not just one child. The child itself is started with ``PR_SET_PDEATHSIG`` (Linux)
pointing at the watchdog, so a watchdog killed by hand takes its child along instead of leaving
it to the next vismem command's stale-server check.

Command line (what :class:`Lifeline` runs)::

    python -I core/lifeline.py [--grace S] [--log FILE] [--sweep-env NAME=VALUE] [--remove DIR] [-- CMD ...]

The first line it prints is the child's pid (``0`` without a child).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

_ME = Path(__file__).resolve()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


def proc_files(name: str) -> Iterator[tuple[int, bytes]]:
    """``(pid, contents of /proc/<pid>/<name>)`` for every process this user may read; nothing
    where there is no procfs (not Linux). A process gone since the listing is skipped. The one
    /proc scan of the project (lifelines, the S3 server's stale check, the peak-memory watcher);
    here because this module runs as a stand-alone script and imports only the standard library."""
    if not os.path.isdir("/proc"):
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/{name}", "rb") as fh:
                data = fh.read()
        except OSError:  # gone, or another user's
            continue
        yield int(entry), data


def descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them, sorted (one /proc scan)."""
    kids: dict[int, list[int]] = {}
    for pid, raw in proc_files("stat"):
        stat = raw.decode(errors="replace")
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        kids.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(pid)
    out, todo = set(roots), list(roots)
    while todo:
        for child in kids.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return sorted(out)


def pids_with_env(name: str, value: str, *, exclude: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
    """Pids whose initial environment holds ``name=value`` (processes we may read only)."""
    needle = f"{name}={value}".encode()
    return [pid for pid, env in proc_files("environ") if pid not in exclude and needle in env.split(b"\0")]


def end_pids(pids: list[int], grace_s: float) -> None:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _sweep(spec: str | None, grace_s: float, exclude: set[int], budget_s: float = 30.0) -> None:
    """End the marked processes until two scans half a second apart find none (processes spawn
    others while they are being ended: a raylet mid-way through starting its agents), within
    ``budget_s`` plus one grace period."""
    if not spec:
        return
    name, _, value = spec.partition("=")
    deadline = time.monotonic() + budget_s

    def marked() -> list[int]:
        # And every process below a marked one: a process that renames itself (setproctitle, as
        # Ray's agents do) overwrites the environment /proc shows, the mark with it.
        return [p for p in descendants(pids_with_env(name, value, exclude=exclude)) if p not in exclude]

    while time.monotonic() < deadline:
        pids = marked()
        if pids:
            end_pids(pids, grace_s)
            continue
        time.sleep(0.5)
        if not marked():
            return


def _die_with_parent(parent: int) -> Any:
    """A ``preexec_fn``: the child gets SIGTERM when the process that started it dies (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere None). If that process is already gone, the child exits."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:  # loaded here, not between fork and exec
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the watchdog died before the signal was armed
            os._exit(1)

    return arm


def main(argv: list[str] | None = None) -> int:
    """The watchdog process (see the module docstring)."""
    p = argparse.ArgumentParser(prog="lifeline")
    p.add_argument("--grace", type=float, default=10.0)
    p.add_argument("--log")
    p.add_argument("--sweep-env")
    p.add_argument("--remove")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    owner = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the owner decides; Ctrl+C reaches it, not us
    cut = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: cut.set())
    child = None
    if cmd:
        log = open(a.log, "ab") if a.log else subprocess.DEVNULL
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=_die_with_parent(os.getpid()))
    print(child.pid if child else 0, flush=True)

    def watch() -> None:
        # os.read, not sys.stdin's buffered reader: this daemon thread is still blocked here when
        # the watchdog exits after its child died, and a thread holding a buffered reader's lock
        # at interpreter shutdown is a "Fatal Python error" printed to the owner's terminal.
        try:
            while os.read(0, 65536):
                pass
        except OSError:
            pass
        cut.set()

    threading.Thread(target=watch, daemon=True).start()
    while not cut.is_set():
        if child is not None and child.poll() is not None:
            _sweep(a.sweep_env, a.grace, {os.getpid(), owner})
            _remove(a.remove)
            return int(child.returncode)
        cut.wait(0.2)
    if child is not None and child.poll() is None:
        end_pids([child.pid], a.grace)
        child.wait()
    _sweep(a.sweep_env, a.grace, {os.getpid(), owner})
    _remove(a.remove)
    return 0


def _remove(folder: str | None) -> None:
    """Remove ``folder`` (after the sweep: no process of the owner's writes to it any more)."""
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


class Lifeline:
    """The owner's side: ``Lifeline(cmd, sweep_env=...)`` starts the watchdog, ``close()`` ends it
    (and with it the child and the swept processes) and waits for it.

    Args:
        cmd: the child command (None: sweep only).
        sweep_env: ``(NAME, VALUE)`` marking the processes to end with the owner.
        log: file the child's stdout/stderr are appended to.
        env / cwd: the watchdog's (and so the child's) environment and working directory.
        grace_s: seconds between SIGTERM and SIGKILL.
        remove: a folder removed once the child and the swept processes are ended.
    """

    def __init__(self, cmd: list[str] | None = None, *, sweep_env: tuple[str, str] | None = None,
                 log: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None, grace_s: float = 10.0,
                 remove: str | os.PathLike[str] | None = None) -> None:
        args = [sys.executable, "-I", str(_ME), "--grace", str(grace_s)]
        if log is not None:
            args += ["--log", str(log)]
        if sweep_env is not None:
            args += ["--sweep-env", f"{sweep_env[0]}={sweep_env[1]}"]
        if remove is not None:
            args += ["--remove", str(remove)]
        if cmd:
            args += ["--", *cmd]
        self.grace_s = grace_s
        # Its own session: a terminal's Ctrl+C or a kill of the owner's process group does not
        # reach it before it has done its job. The pipe's write end is not inheritable (PEP 446),
        # so only the owner holds it.
        self.proc: subprocess.Popen[bytes] = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
        line = self.proc.stdout.readline() if self.proc.stdout else b""
        self.child_pid = int(line.strip() or 0)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        """The watchdog's exit status (it exits with its child's), None while it runs."""
        return self.proc.poll()

    def close(self, timeout_s: float | None = None) -> None:
        """Cut the line and wait for the watchdog; kill it (and the child) if it does not finish."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=timeout_s if timeout_s is not None else self.grace_s * 2 + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            if self.child_pid and alive(self.child_pid):
                end_pids([self.child_pid], 0)
        # A watchdog killed by hand left its child only PR_SET_PDEATHSIG's SIGTERM, which a child
        # busy or hung in its shutdown may never act on: nobody else would SIGKILL it. The child
        # is ours (started by our watchdog, which is gone), so end it here, with the grace.
        if self.child_pid and alive(self.child_pid):
            end_pids([self.child_pid], self.grace_s)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> "Lifeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(main())
