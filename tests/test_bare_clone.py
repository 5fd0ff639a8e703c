"""The README's two commands from a fresh clone with no ``shared/`` folder beside it.

The checkout's files (what a clone of this working tree holds) are copied into an empty temp
folder; its ``.venv`` is this interpreter's packages with ``vismem`` mapped to the clone (what
``scripts/setup.sh`` would install, minus the downloads), so ``scripts/run_local.sh`` and
``scripts/test.sh`` run from the clone as a new user's would. The pinned data files come from a
loopback mirror built from the real data (the internet is not reachable here); the per-user data
dir is a temp ``$XDG_DATA_HOME``. Each rule on its own, fast: ``tests/pipelines/test_data_default.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.rangeserver import build_mirror, serve

REPO = Path(__file__).resolve().parent.parent
#: A tiny main job that reads LoCoMo (and, by its enabled DMV-Bench stages' inputs, DMV-Bench).
TINY = ["memshot", "--store", "file://{store}", "--no-progress", "--json", "--variant", "text-rag", "--k", "5",
        "--set", "memshot.memories=[]"]
#: A slice of the suite that reads both datasets.
SLICE = ["tests/env/dialogue/test_locomo.py", "tests/env/storefront/test_catalog.py", "-x"]


def _clone(dest: Path) -> Path:
    """The checkout's tracked and untracked-but-not-ignored files, copied to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _venv(clone: Path) -> None:
    """``clone/.venv``: this interpreter's site-packages, ``vismem`` mapped to the clone (an editable
    install's finder with the checkout's path replaced), the console script, ``weed``, set-up's stamp."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    finders = [f for d in deps for f in Path(d).glob("__editable___vismem_*_finder.py")
               if str(REPO) in f.read_text()]
    if not finders:
        pytest.fail(f"vismem is not installed editable from {REPO} (scripts/setup.sh does that)")
    (site / finders[0].name).write_text(finders[0].read_text().replace(str(REPO), str(clone)))
    (site / "__editable__.vismem.pth").write_text(f"import {finders[0].stem}; {finders[0].stem}.install()\n")
    (site / "zz-deps.pth").write_text("\n".join(deps) + "\n")
    script = venv / "bin" / "vismem"
    script.write_text(f"#!{venv}/bin/python\nimport sys\nfrom vismem.pipelines.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    weed = Path(sys.executable).parent / "weed"
    weed = weed if weed.exists() else Path(shutil.which("weed") or "/nonexistent")
    if weed.exists():
        (venv / "bin" / "weed").symlink_to(weed)
    (venv / ".vismem-setup").write_text(hashlib.sha256((clone / "pyproject.toml").read_bytes()).hexdigest()[:16] + "\n")


def _env(xdg: Path, mirror_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VISMEM_DATA_DIR", "VISMEM_SHARED", "PYTHONPATH", "VIRTUAL_ENV", "VISMEM_SLOW")}
    return {**env, "XDG_DATA_HOME": str(xdg), "VISMEM_DATA_MIRROR": mirror_url}


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.slow
def test_a_fresh_clone_without_shared_runs_the_main_job_and_the_suite(tmp_path, data_dir):
    clone = _clone(tmp_path / "home" / "vismem")
    assert not (clone.parent / "shared").exists()
    _venv(clone)
    pinned = ["dmv-bench/LICENSE", "dmv-bench/cue_registry.json", "dmv-bench/seed_v2.json", "locomo/LICENSE",
              "locomo/locomo10.json"]
    with serve(build_mirror(data_dir, tmp_path / "mirror")) as (url, _log):
        tiny = [a.format(store=tmp_path / "store") for a in TINY]
        run = subprocess.run(["bash", "scripts/run_local.sh", *tiny], cwd=clone, capture_output=True, text=True,
                             env=_env(tmp_path / "xdg-run", url), timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        out = json.loads(run.stdout[run.stdout.index("{"):])
        assert out["memshot"]["status"] == "done" and out["memshot"]["recall"]
        fetched = [ln for ln in run.stderr.splitlines() if ln.startswith("data: fetched ")]
        assert len(fetched) == len(pinned), run.stderr[-3000:]
        assert _files(tmp_path / "xdg-run" / "vismem" / "data") == pinned

        suite = subprocess.run(["bash", "scripts/test.sh", *SLICE], cwd=clone, capture_output=True, text=True,
                               env=_env(tmp_path / "xdg-suite", url), timeout=900)
        assert suite.returncode == 0 and " passed" in suite.stdout, (suite.stdout + suite.stderr)[-3000:]
        assert "failed" not in suite.stdout and "error" not in suite.stdout.lower().split("passed")[-1]
        assert _files(tmp_path / "xdg-suite" / "vismem" / "data") == pinned

    # A mirror serving a changed file: the main job stops before any work with the checksum error.
    bad = build_mirror(data_dir, tmp_path / "bad-mirror")
    body = bytearray((bad / "locomo" / "locomo10.json").read_bytes())
    body[100] ^= 1
    (bad / "locomo" / "locomo10.json").write_bytes(bytes(body))
    shutil.rmtree(clone / "runs", ignore_errors=True)
    with serve(bad) as (url, _log):
        tiny = [a.format(store=tmp_path / "bad-store") for a in TINY]
        run = subprocess.run(["bash", "scripts/run_local.sh", *tiny], cwd=clone, capture_output=True, text=True,
                             env=_env(tmp_path / "xdg-bad", url), timeout=300)
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("vismem: error:")]
    assert run.returncode == 4 and len(errors) == 1, run.stderr[-3000:]
    assert "locomo/locomo10.json: missing and could not be fetched" in errors[0] and "sha256" in errors[0]
    assert "`vismem data fetch locomo`" in errors[0] and "VISMEM_DATA_MIRROR" in errors[0] and "data_dir" in errors[0]
    assert not (tmp_path / "xdg-bad").exists() and not (tmp_path / "bad-store").exists()
    assert not (clone / "runs").exists()
