"""The trajectory viewer's probe side as pure functions: the stratified sample, probe groups
(one per question, every architecture's outcome), packed step-log chunks, image files."""

from __future__ import annotations

import base64
import gzip
import io
import json

import polars as pl
import pytest

from vismem.analysis.probe_page import pack, pair_counts, probe_groups, probe_uid, sample_note, sample_probes
from vismem.analysis.viewer_files import image_files, shrink

ARCHS = ["nomemory", "textonly", "dualmem", "m2a-lite"]


def _probes(chains: int = 3, per_reach: int = 30, reaches: int = 4) -> pl.DataFrame:
    """Every architecture answers every probe; rows in architecture order, as the results table."""
    rows = []
    for a in ARCHS:
        for c in range(chains):
            for r in range(1, reaches + 1):
                for i in range(per_reach):
                    rows.append({"backend": "b", "chain_slug": f"chain{c}", "seed": c, "architecture": a,
                                 "arch_key": f"{a}--k", "probe_id": f"p{r}_{i}", "recall_session": r + 1,
                                 "visit_session": 1, "reach": r, "correct": (i + len(a)) % 3 == 0,
                                 "target_url": f"/product/{c}{r}{i:02d}", "final_url": None, "failure": "done"})
    return pl.DataFrame(rows)


def test_a_run_within_the_budget_is_kept_whole():
    df = _probes(1, 2, 2)
    out, info = sample_probes(df, 10_000)
    assert sample_note(info) == "" and out.equals(df) and info == {"probes": 4, "episodes": 16, "sampled_probes": 4, "sampled_episodes": 16,
                                       "per_stratum": 0}


def test_sample_is_stratified_per_architecture_and_reach_and_keeps_whole_probes():
    df = _probes()
    # The old rule (the first N rows) would give the last architectures nothing at all.
    assert not set(df.head(600)["architecture"]) & {"dualmem", "m2a-lite"}
    out, info = sample_probes(df, 600, seed=7)
    assert info["sampled_episodes"] == out.height <= 600 and info["episodes"] == df.height
    counts = out.group_by("architecture", "reach").len()["len"].to_list()
    assert len(counts) == len(ARCHS) * 4 and len(set(counts)) == 1 and counts[0] >= info["per_stratum"] > 0
    # Every chosen probe comes with all four architectures (side by side stays complete).
    assert set(out.group_by("chain_slug", "seed", "probe_id", "recall_session").len()["len"].to_list()) == {4}
    assert info["sampled_probes"] == out.height // 4 < info["probes"]
    assert sample_note(info).startswith(f"Probes: a seeded sample of {info['sampled_probes']} of 360 (")
    again, _ = sample_probes(df, 600, seed=7)
    other, _ = sample_probes(df, 600, seed=8)
    assert again.equals(out) and not other.equals(out)  # seeded: the same seed, the same sample


def test_pair_counts_over_the_whole_run():
    df = pl.DataFrame({"chain_slug": ["c"] * 7, "seed": [0] * 7, "recall_session": [2] * 7,
                       "probe_id": ["p1", "p1", "p2", "p2", "p3", "p3", "p4"], "reach": [1] * 7,
                       "architecture": ["a", "b", "a", "b", "a", "b", "a"],
                       "correct": [True, False, True, True, False, True, True]})
    n = pair_counts(df)
    assert n["a"]["b"] == [1, 1, 1, 0]  # p4: only a answered it, not counted
    assert n["b"]["a"] == [1, 1, 1, 0] and pair_counts(df.head(0)) == {}


def test_sample_of_a_tight_budget_still_covers_every_stratum():
    out, info = sample_probes(_probes(), 1, seed=0)
    assert info["per_stratum"] == 1 and out.group_by("architecture", "reach").len().height == len(ARCHS) * 4


def _log(target: str, other: str) -> str:
    return json.dumps([{"step": 1, "url": "/", "status": "ok", "action_type": "navigate", "action_arg": f"/product/{target}",
                        "reply": "r" * 5000, "error": None, "recalled": [target, other], "n_images": 2,
                        "memory_text": "MEMORY"}])


def _unpack(z: str):
    return json.loads(gzip.decompress(base64.b64decode(z)))


def test_probe_groups_put_every_architecture_of_a_probe_together():
    df = pl.DataFrame({
        "backend": ["rec"] * 3, "chain_slug": ["slug"] * 3, "chain_backend": ["chain A"] * 3, "seed": [0] * 3,
        "architecture": ["dualmem", "textonly", "dualmem"], "probe_id": ["p1", "p1", "p2"], "recall_session": [2, 2, 3],
        "visit_session": [1, 1, 1], "reach": [1, 1, 2], "correct": [True, False, False],
        "target_url": ["/product/aa", "/product/aa", "/product/bb"], "final_url": ["/product/aa", "/product/cc", None],
        "failure": [None, "wrong_product", "no_product"], "steps": [1, 1, 8], "target_cue": ["red ball"] * 3,
        "log": [_log("aa", "cc"), _log("cc", "aa"), None],
        "scores": [json.dumps([[{"visual": 0.9, "fused": 0.8}, {"visual": 0.1, "fused": 0.2}]]), None, None]})
    banks = {("dualmem", "slug", 0, "aa"): {"session": 1, "position": 0, "text": "wrote aa"},
             ("textonly", "slug", 0, "cc"): {"session": 1, "position": 1, "text": "a rug"}}
    groups, archs = probe_groups(df, banks=banks)
    assert archs == ["dualmem", "textonly"] and [g["k"] for g in groups] == ["chain A|0|p1|2", "chain A|0|p2|3"]
    g = groups[0]
    assert g["k"] == probe_uid("chain A", 0, "p1", 2) and g["chain"] == "chain A" and g["backend"] == "rec"
    assert g["o"] == {"dualmem": {"ok": True, "fin": "/product/aa", "fail": None, "n": 1, "v": None},
                      "textonly": {"ok": False, "fin": "/product/cc", "fail": "wrong_product", "n": 1, "v": None}}
    chunk = _unpack(g["z"])
    d, t = chunk["logs"]["dualmem"][0], chunk["logs"]["textonly"][0]
    assert d["recalled"] == ["aa", "cc"] and d["scores"] == [{"visual": 0.9, "fused": 0.8}, {"visual": 0.1, "fused": 0.2}]
    assert t["scores"] is None and d["action"] == "navigate /product/aa" and len(d["reply"]) < 4100  # capped
    assert chunk["entries"] == {"dualmem": {"aa": banks[("dualmem", "slug", 0, "aa")]},
                                "textonly": {"cc": banks[("textonly", "slug", 0, "cc")]}}
    assert groups[1]["z"] is None and groups[1]["o"]["dualmem"]["fail"] == "no_product"  # no log, no chunk
    assert probe_groups(None) == ([], [])


def test_pack_is_deterministic_gzip_base64():
    assert pack({"a": [1, "<"]}) == pack({"a": [1, "<"]})
    assert _unpack(pack({"a": [1, "<"]})) == {"a": [1, "<"]}


def _png(size: int, colour=(200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buf, format="PNG")
    return buf.getvalue()


def test_image_files_are_content_named_relative_and_shrunk():
    big, small = _png(512), _png(64, (0, 0, 200))
    refs, files = image_files({"k1": big, "k2": big, "k3": small}, ["k1", "k2", "k3", "missing", None], max_px=320)
    assert set(refs) == {"k1", "k2", "k3"} and refs["k1"] == refs["k2"]  # the same bytes: one file
    assert len(files) == 2 and all(p.startswith("img/") for p in files)
    assert refs["k1"].endswith(".jpg") and refs["k3"].endswith(".png") and files[refs["k3"]] == small
    from PIL import Image

    assert max(Image.open(io.BytesIO(files[refs["k1"]])).size) == 320
    assert shrink(b"not an image", 320) == (b"not an image", "bin")


@pytest.mark.parametrize("n", [1, 3])
def test_probe_uid_joins_the_identity(n):
    assert probe_uid("c", n, "p", 2) == f"c|{n}|p|2"
