"""Peak memory of this process and of the processes it started, for run summaries and benchmarks.

Two figures, both in MiB:

* ``self_peak_mib``: this process's own high-water mark (``VmHWM``, kept by the kernel, so no
  peak between samples is missed). :func:`reset_peak` starts a new high-water mark (Linux
  ``clear_refs`` 5), so each stage or benchmark gets its own.
* ``tree_peak_mib``: the largest sampled sum of PSS over this process and every descendant --
  in local mode that is the run's Ray (GCS, raylet, workers, the object store) and the shop or S3
  servers it started. PSS, not RSS: a page shared by several workers (the plasma store, forked
  libraries) is counted once in total instead of once per process. Sampled every
  ``interval_s`` or less often (see :class:`PeakWatch`), so a spike shorter than that can be
  missed; processes on other machines (a remote cluster) or outside the tree (a caller's Ray)
  are not seen.

Linux ``/proc`` only; elsewhere both figures fall back to ``ru_maxrss`` of this process.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from typing import Any

from vismem.core.lifeline import descendants

_MIB = 1 << 20


def reset_peak() -> bool:
    """Start a new high-water mark for this process (False where the kernel has no clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def self_peak_mib() -> float:
    """This process's peak resident memory since start or the last :func:`reset_peak`."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def tree_pids(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and all its descendants."""
    return descendants([root or os.getpid()])


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def tree_mib(root: int | None = None) -> float:
    """Current PSS of ``root``'s process tree."""
    return sum(_pss_kib(p) for p in tree_pids(root)) / 1024


class PeakWatch:
    """``with PeakWatch() as w: ...`` then ``w.self_peak_mib`` / ``w.tree_peak_mib``.

    A daemon thread samples the tree every ``interval_s``, or less often when sampling is dear: a
    sample reads every tree process's PSS, a walk of its page tables (~20 ms of CPU with a local
    Ray up, i.e. 4-9% of a core at 0.25-0.5 s), so the wait after a sample is at least
    ``1 / max_duty`` times that sample's own CPU time, keeping the watcher near 1% of a core.
    """

    def __init__(self, interval_s: float = 0.5, max_duty: float = 0.01) -> None:
        self.interval_s, self.max_duty = interval_s, max_duty
        self.samples = 0
        self.self_peak_mib = self.tree_peak_mib = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc = os.path.isdir("/proc/self")

    def _sample(self) -> None:
        self.samples += 1
        if self._proc:
            self.tree_peak_mib = max(self.tree_peak_mib, tree_mib())

    def _loop(self) -> None:
        wait = self.interval_s
        while not self._stop.wait(wait):
            t0 = time.thread_time()
            self._sample()
            wait = max(self.interval_s, (time.thread_time() - t0) / self.max_duty)

    def __enter__(self) -> "PeakWatch":
        reset_peak()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="peakmem", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self.self_peak_mib = self_peak_mib()
        # Never below the own peak: the tree holds this process (and, without /proc, is only it).
        self.tree_peak_mib = max(self.tree_peak_mib, self.self_peak_mib if not self._proc else 0.0)

    def as_dict(self) -> dict[str, float]:
        """``{"peak_rss_mib", "tree_peak_mib"}`` rounded to 0.1 MiB (what manifests and records keep)."""
        return {"peak_rss_mib": round(self.self_peak_mib, 1), "tree_peak_mib": round(self.tree_peak_mib, 1)}
