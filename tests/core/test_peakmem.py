"""Peak memory as runs and benchmarks report it: the own high-water mark restarts per watch, and
the process tree's peak counts what a child process holds."""

from __future__ import annotations

import mmap
import subprocess
import sys

from vismem.core.peakmem import PeakWatch, self_peak_mib


def test_own_peak_restarts_per_watch():
    with PeakWatch(interval_s=0.05) as big:
        # Anonymous mmap, not a bytearray: malloc may serve 96 MiB from heap pages already resident
        # (the suite's earlier tests load libraries that raise its mmap threshold), so RSS would not move.
        block = mmap.mmap(-1, 96 << 20)
        for off in range(0, len(block), 4096):  # touch every page: resident
            block[off] = 1
        block.close()
    with PeakWatch(interval_s=0.05) as small:
        pass
    assert big.self_peak_mib >= 96 and small.self_peak_mib < big.self_peak_mib - 64
    assert self_peak_mib() > 0 and big.as_dict()["peak_rss_mib"] == round(big.self_peak_mib, 1)


#: A fresh process whose tree is itself and one child holding 128 MiB: the watch of a pytest
#: worker's own tree also sees its session servers (weed, Chromium, a Ray), whose pages come and
#: go by more than the child's 128 MiB while it lives.
_TREE = """
import subprocess, sys
from vismem.core.peakmem import PeakWatch, tree_mib, tree_pids
code = "import time; b = bytearray(128 << 20); b[::4096] = b'x' * len(b[::4096]); print('ok', flush=True); time.sleep(1.5)"
before = tree_mib()
with PeakWatch(interval_s=0.1) as w:
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ok"
    assert child.pid in tree_pids()
    child.wait(timeout=30)
print(before, w.tree_peak_mib)
"""


def test_tree_peak_counts_a_child_process():
    out = subprocess.run([sys.executable, "-c", _TREE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, peak = map(float, out.stdout.split())
    assert peak >= before + 100  # the child's 128 MiB, sampled while it held them


def test_dear_samples_are_taken_less_often(monkeypatch):
    import time

    def dear_sample(self):  # a sample that costs 20 ms of CPU, as with a local Ray up
        self.samples += 1
        t = time.thread_time()
        while time.thread_time() - t < 0.02:
            pass

    monkeypatch.setattr(PeakWatch, "_sample", dear_sample)
    with PeakWatch(interval_s=0.01, max_duty=0.05) as w:  # waits >= 0.02 / 0.05 = 0.4 s
        time.sleep(1.0)
    # entry + exit + at most ~3 in the loop; at the bare 10 ms interval it would be ~30
    assert 2 <= w.samples <= 6
