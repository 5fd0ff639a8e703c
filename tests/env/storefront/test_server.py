"""Starting the shop: the in-process server, ``python -m vismem.env.storefront``, image sources, the audit CLI."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from vismem.env.storefront.imagesource import IMAGE_SOURCES, ImageSource, build_image_source

REPO = Path(__file__).resolve().parents[3]


def test_in_process_server_binds_loopback_on_a_free_port(shop_server):
    assert shop_server.host == "127.0.0.1" and shop_server.port > 0
    r = httpx.get(shop_server.url + "/category/lamp")
    assert r.status_code == 200 and "Lamps" in r.text


def test_python_m_storefront_serves(data_dir):
    p = subprocess.Popen([sys.executable, "-m", "vismem.env.storefront", "--data-dir", str(data_dir),
                          "--seed", "3"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = p.stdout.readline()
        assert "storefront serving 1000 products at http://127.0.0.1:" in line, line
        url = line.strip().rsplit(" ", 1)[-1]
        assert httpx.get(url + "/product/df5b5fde").status_code == 200
        # The default image source is the procedural one (a real product picture, not the placeholder).
        from vismem.env.storefront.catalog import load_catalog
        from vismem.env.storefront.imagesource import build_image_source

        img_paths = [a for a in httpx.get(url + "/product/df5b5fde").text.split('"') if a.startswith("/images/")]
        assert img_paths, "product page shows no image"
        served = httpx.get(url + img_paths[0]).content
        cat = load_catalog(data_dir, seed=3)
        assert served == build_image_source("procedural", cat).get("df5b5fde")
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)


def test_placeholder_and_store_sources(catalog, file_store):
    ph = build_image_source("placeholder", catalog)
    assert isinstance(ph, ImageSource) and "placeholder" in IMAGE_SOURCES
    png = ph.get("df5b5fde")
    assert png[:4] == b"\x89PNG" and ph.get("df5b5fde") == png
    with pytest.raises(KeyError):
        ph.get("00000000")
    v = catalog.by_hash["df5b5fde"]
    file_store.put_bytes(f"imgs/{v.image_path}", b"\x89PNG-cue")
    file_store.put_bytes(f"imgs/{v.base_image_path}", b"\x89PNG-base")
    src = build_image_source({"name": "store", "args": {"uri": file_store.spec.uri, "prefix": "imgs"}}, catalog)
    assert src.get("df5b5fde") == b"\x89PNG-cue" and src.get("df5b5fde", with_cue=False) == b"\x89PNG-base"
    assert src.spec == {"name": "store", "args": {"uri": file_store.spec.uri, "prefix": "imgs"}}
    with pytest.raises(FileNotFoundError):
        src.get(catalog.variants[1].url_hash)


def test_vismem_audit_cli(data_dir, tmp_path):
    out = tmp_path / "audit.json"
    r = subprocess.run([sys.executable, "-m", "vismem", "audit", "--data-dir", str(data_dir),
                        "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "L2 audit PASSED" in r.stdout and out.exists()
