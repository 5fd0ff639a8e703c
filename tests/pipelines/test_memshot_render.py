"""The render job on the real local Ray, writing to the real S3 server (weed), and resuming."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vismem.core.errors import ConfigError
from vismem.pipelines.memshot.render import (
    INPUT_COLUMNS,
    OUTPUT_COLUMNS,
    SCHEMA_VERSION,
    UNIT_COLUMNS,
    read_units,
    render_units,
    session_rows,
    shard_key,
)


def test_session_rows_declare_columns(small):
    rows = session_rows(small)
    assert len(rows) == 6 and all(tuple(r) == INPUT_COLUMNS for r in rows)


def test_ray_job_s3_and_resume(ray_local, s3_store, small):
    prefix = "runs/t/memshot/locomo/memshot"
    s = render_units(s3_store, small, "memshot", ray_local, prefix, batch_size=2)
    assert s["sessions"] == 6 and s["rendered_sessions"] == 6 and s["skipped_sessions"] == 0
    df = read_units(s3_store, prefix)
    assert tuple(df.columns) == UNIT_COLUMNS + ("schema_version",)
    assert df["schema_version"].unique().to_list() == [SCHEMA_VERSION]
    assert df.height == s["units"] == s["rendered_units"] and df.height >= 6
    # every shot is in the store and decodes to 948 x height
    for key, h, n in df.select("key", "height", "bytes").iter_rows():
        data = s3_store.get_bytes(key)
        assert len(data) == n and Image.open(io.BytesIO(data)).size == (948, h) and h <= 768
    # every turn of every session is in some unit
    for c in small:
        for sess in c.sessions:
            shown = set(df.filter((df["conversation_id"] == c.conversation_id) & (df["session_id"] == sess.session_id))
                        ["dia_ids"].explode().to_list())
            assert shown == {t.dia_id for t in sess.turns}

    # second run: everything is there, nothing is rendered, same table
    s2 = render_units(s3_store, small, "memshot", ray_local, prefix)
    assert s2["rendered_sessions"] == 0 and s2["skipped_sessions"] == 6 and s2["units"] == df.height
    assert read_units(s3_store, prefix).drop("layout_ms", "draw_ms", "encode_ms", "write_ms").equals(
        df.drop("layout_ms", "draw_ms", "encode_ms", "write_ms"))

    # a killed run (one shard missing): only that session is rendered again, same bytes
    lost = shard_key(prefix, small[1].conversation_id, "session_2")
    key0 = df.filter(df["unit_id"] == f"{small[1].conversation_id}/session_2/u000")["key"][0]
    before = s3_store.get_bytes(key0)
    s3_store.delete(lost)
    s3 = render_units(s3_store, small, "memshot", ray_local, prefix)
    assert s3["rendered_sessions"] == 1 and s3["units"] == df.height
    assert s3_store.get_bytes(key0) == before

    # the same prefix with another variant spec is refused
    with pytest.raises(ConfigError, match="different variant spec"):
        render_units(s3_store, small, "h512", ray_local, prefix, use_ray=False)


def test_text_variant_in_process(file_store, small):
    s = render_units(file_store, small, "text-rag", None, "p/text-rag", use_ray=False)
    df = read_units(file_store, "p/text-rag")
    assert s["units"] == 6 == df.height and df["key"].null_count() == 6
    assert df["text"][0].startswith("DATE: 1:56 pm on 8 May, 2023\nCONVERSATION:\n")
    assert OUTPUT_COLUMNS[0] == "conversation_id"


def test_render_all_from_config(file_store, data_dir):
    from vismem.pipelines.memshot.config import MemShotConfig
    from vismem.pipelines.memshot.render import load_conversations, render_all

    cfg = MemShotConfig(conversations=1, variants=("no-render", "text-rag"))
    convs = load_conversations(cfg, data_dir)
    assert [c.conversation_id for c in convs] == ["conv-26"]
    out = render_all(file_store, cfg, convs, None, "runs/r1", use_ray=False)
    assert out["text-rag"]["units"] == 19 and out["no-render"]["units"] > 19
    assert out["no-render"]["table"] == "runs/r1/memshot/locomo/no-render/units.parquet"
    with pytest.raises(ConfigError, match="no file is given: set memshot.dataset_path"):
        load_conversations(MemShotConfig(dataset="longmemeval"), data_dir)


def test_run_render_job_for_the_stage(file_store, data_dir):
    """The stage's entry point: units frame (modality, image_key) and render seconds."""
    from types import SimpleNamespace

    from vismem.pipelines.memshot.config import MemShotConfig
    from vismem.pipelines.memshot.render import run_render_job

    cfg = SimpleNamespace(memshot=MemShotConfig(conversations=1, variants=("no-render", "text-rag")), ray=None)
    ctx = SimpleNamespace(config=cfg, store=file_store, data_dir=data_dir, run_prefix="runs/r2")
    import vismem.pipelines.memshot.render as mr

    orig = mr.render_all
    mr.render_all = lambda *a, **k: orig(*a, **k, use_ray=False)  # the Ray path is covered above
    try:
        out = run_render_job(ctx)
    finally:
        mr.render_all = orig
    u = out.units
    assert set(u["variant"].unique()) == {"no-render", "text-rag"} and set(u["modality"].unique()) == {"text"}
    assert u["image_key"].null_count() == u.height and "unit_index" in u.columns
    rs = out.render_seconds
    assert rs.columns == ["conversation_id", "variant", "render_s"] and rs.height == 2
    assert (rs["render_s"] > 0).all() and [c.conversation_id for c in out.conversations] == ["conv-26"]


def test_worker_data_error_reaches_the_driver(ray_local, file_store, small, tmp_path):
    """A turn-pair taller than a LoCoMo shot is a DataError in a worker, and a DataError here."""
    from vismem.core.errors import DataError

    spec = tmp_path / "tiny.yaml"
    spec.write_text("kind: shots\nmax_height: 128\noversize: error\n")
    with pytest.raises(DataError, match=r"conv-26/session_1: turn-pair 0 is \d+ px tall alone"):
        render_units(file_store, small[:1], str(spec), ray_local, "p/tiny")


def test_ids_differing_only_in_punctuation_keep_their_own_units(file_store, small):
    """"conv 26" and "conv_26" used to share one storage key: one's units vanished, the other's doubled."""
    from dataclasses import replace

    a = replace(small[0], conversation_id="conv 26", sessions=small[0].sessions[:1])
    b = replace(small[1], conversation_id="conv_26", sessions=small[1].sessions[:1])
    render_units(file_store, [a, b], "memshot", None, "p/punct", use_ray=False)
    df = read_units(file_store, "p/punct")
    want = {c.conversation_id: render_units(file_store, [c], "memshot", None, f"p/{i}", use_ray=False)["units"]
            for i, c in enumerate((a, b))}
    assert df.group_by("conversation_id").len().sort("conversation_id").rows() == sorted(want.items())
    assert df["key"].n_unique() == df.height  # every shot its own bytes
    for i, c in enumerate((a, b)):  # each conversation's shots are its own, byte for byte
        alone = read_units(file_store, f"p/{i}").sort("unit_id")
        mine = df.filter(df["conversation_id"] == c.conversation_id).sort("unit_id")
        assert [file_store.get_bytes(k) for k in mine["key"]] == [file_store.get_bytes(k) for k in alone["key"]]


def test_a_damaged_shot_pack_or_shard_is_named_and_its_session_rendered_again(tmp_path, small, caplog, capsys):
    # A pack overwritten with random bytes of its own length and a torn shard: the next render
    # names each in one line, renders those two sessions again to the same bytes, says so, and
    # `vismem store verify` finds the same damage.
    import logging
    import os

    from vismem.core.store import Store
    from vismem.pipelines.cli import main
    from vismem.pipelines.memshot.render import pack_key
    from vismem.pipelines.memshot.stage import describe

    store = Store.open(f"file://{tmp_path}/st")
    prefix = "runs/t/memshot/locomo/memshot"
    conv = small[:1]
    render_units(store, conv, "memshot", None, prefix, use_ray=False)
    cid = conv[0].conversation_id
    pack, torn = pack_key(prefix, cid, "session_1"), shard_key(prefix, cid, "session_2")
    good = {k: store.get_bytes(k) for k in (pack, pack_key(prefix, cid, "session_2"))}
    store.put_bytes(pack, os.urandom(len(good[pack])))
    store.put_bytes(torn, b'{"schema_version": 2, "ro')

    assert main(["store", "verify", "--store", f"file://{tmp_path}/st"]) == 1
    out = capsys.readouterr().out
    assert f"damaged cache object {pack}: {len(good[pack])} bytes" in out and f"damaged cache marker {torn}" in out
    assert "3 cached units checked, 2 damaged" in out

    with caplog.at_level(logging.WARNING, logger="vismem"):
        s = render_units(store, conv, "memshot", None, prefix, use_ray=False)
    assert (s["healed"], s["rendered_sessions"], s["skipped_sessions"]) == (2, 2, 1)
    lines = [r.getMessage() for r in caplog.records if "discarded, recomputing" in r.getMessage()]
    assert len(lines) == 2 and all("\n" not in line for line in lines) and any(pack in line for line in lines)
    assert {k: store.get_bytes(k) for k in good} == good
    assert main(["store", "verify", "--store", f"file://{tmp_path}/st"]) == 0
    assert "damaged shot packs redone" in describe({"conversations": 1, "questions": 2, "units": 9, "healed": 2})
