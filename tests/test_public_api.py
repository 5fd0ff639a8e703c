"""The namespace's public face: ``import vismem`` is cheap and names the few things users call."""

from __future__ import annotations

import subprocess
import sys

import pytest

import vismem


def test_import_is_cheap_and_names_resolve_on_use():
    code = ("import sys, vismem; heavy = [m for m in ('ray', 'polars', 'torch', 'vismem.pipelines.runner') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
    assert set(vismem.__all__) >= {"run", "load_config", "RunConfig", "build_vlm", "build_embedder", "registries"}
    assert vismem.load_config(preset="local").run_id.startswith("local-")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        vismem.nope  # noqa: B018


def test_registries_by_kind_know_their_built_ins():
    regs = vismem.registries()
    assert {"vlm", "embedder", "image_source", "dataset", "dialogue-memory", "architecture", "captioner"} <= set(regs)
    assert "locomo" in regs["dataset"].names() and "dual" in regs["architecture"].names()
    assert "dualmem" in regs["architecture"].variants()  # a YAML variant of the family
    vlm = vismem.build_vlm({"name": "scripted", "args": {"replies": ["hi"]}})
    assert vlm.stand_in is True


def test_python_m_vismem_is_the_cli():
    out = subprocess.run([sys.executable, "-m", "vismem", "list", "stages", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert '"memshot"' in out.stdout and '"report"' in out.stdout


def test_vismem_list_shows_every_registry():
    # Each registry of the public face is a kind `vismem list` prints (no registry goes unlisted).
    import json

    from vismem.pipelines.registries import REGISTRIES

    out = subprocess.run([sys.executable, "-m", "vismem", "list", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    regs = vismem.registries()
    for kind in REGISTRIES:
        names = set(regs[kind].names())
        assert any(names <= {r["name"] for r in rows} for rows in listed.values()), kind
