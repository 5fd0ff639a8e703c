"""A real full disk under the default ``local-s3://`` store: weed out of space answers a bare
"internal error", which must still be one line naming the full disk, exit 3, and a manifest that
ends ``failed``. Needs a small filesystem of its own (a tmpfs mounted here: root only)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import yaml


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_weed_out_of_disk_mid_encode_is_one_line_exit_3_and_the_run_ends_failed(small_disk, tmp_path, capsys):
    from vismem.pipelines.cli import main

    data = {"name": "weedfull", "stages": ["encode", "replay"], "runs_dir": str(small_disk / "runs"),
            "encode": {"chains": 1, "J": 3, "env": "http", "workers": 1},
            "memory": {"architectures": ["textonly"], "components": {}}}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(data))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "VISMEM_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "vismem", "run", "--config", str(cfg), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    filler = small_disk / "filler"
    try:
        # Once the run has begun (its manifest written, space set aside for it), weed has made its
        # volumes: fill the disk but for 400 KB, less than the session shots encode is about to store.
        deadline = time.monotonic() + 180
        while not list((small_disk / "runs").glob("*/.state-reserve")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        with open(filler, "wb") as fh:
            fh.write(b"\0" * max(shutil.disk_usage(small_disk).free - 400 * 1024, 0))
        _out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    r = SimpleNamespace(returncode=proc.returncode, stderr=err)
    assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr and "encode stage first" not in r.stderr, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("vismem:")]
    assert len(lines) == 1 and lines[0] == r.stderr.strip().splitlines()[-1], r.stderr[-3000:]
    s3dir = re.escape(str(small_disk / "runs" / ".s3"))
    assert re.fullmatch(r"vismem: error: no space left on device writing s3://vismem/\S+ \(the disk of the store's "
                        rf"S3 server http://127\.0\.0\.1:\d+ is full: {s3dir}\) during stage encode", lines[0]), lines[0]

    filler.unlink()  # room again: the next command records the failure if the full store could not
    # That command in this process: what it writes is the command's doing, not its process's.
    capsys.readouterr()
    rc = main(["runs", "--config", str(cfg), "--json", "--no-headline"])
    listed = capsys.readouterr()
    assert rc == 0, listed.err[-2000:]
    (row,) = json.loads(listed.out)
    assert (row["status"], row["stages"]) == ("failed", {"encode": "failed"}), row
    assert not list((small_disk / "runs").glob("*/pending-state*"))
