"""Unchanged outputs (issue 18): shots written on background threads into the local S3 server
through the lean PUT are the same objects, and the same shard rows, as shots written inline
through boto3 or into a plain directory."""

from __future__ import annotations

import json

import pytest

from vismem.core.store import Store


def _render(store, monkeypatch, threads: int, lean: bool):
    import vismem.pipelines.memshot.render as render
    from vismem.env.dialogue import load_locomo
    from vismem.memory.dialogue.variants import load_variant
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import resolve_data_dir

    monkeypatch.setattr(render, "WRITE_THREADS", threads)
    monkeypatch.setattr(render, "_WRITER", None)
    monkeypatch.setenv("VISMEM_S3_LEAN", "1" if lean else "0")
    rows = render.session_rows(load_locomo(resolve_data_dir(RunConfig()) / "locomo/locomo10.json")[:1])[:3]
    out = render.render_rows(rows, store=store, variant=load_variant("memshot"), prefix="p")
    monkeypatch.setattr(render, "_WRITER", None)
    return out


def _contents(store):
    got = {}
    for k in store.list("p"):
        data = store.get_bytes(k)
        if k.endswith(".json"):  # shard rows without their write times
            doc = json.loads(data)
            data = json.dumps([{c: v for c, v in r.items() if not c.endswith("_ms")} for r in doc["rows"]])
        got[k] = data
    return got


@pytest.mark.parametrize("threads,lean", [(0, False), (2, True)])
def test_shots_and_shards_equal_a_plain_directorys(tmp_path, s3_server, monkeypatch, threads, lean):
    plain = Store.open(f"file://{tmp_path}/plain")
    _render(plain, monkeypatch, 0, False)
    s3 = Store.open(f"s3://vismem-test/render-writes-{threads}-{tmp_path.name}", endpoint_url=s3_server.endpoint_url,
                    access_key=s3_server.access_key, secret_key=s3_server.secret_key)
    out = _render(s3, monkeypatch, threads, lean)
    assert bool(s3._lean) is lean
    want = _contents(plain)
    assert len(want) > 3 and _contents(s3) == want
    assert all(s3.exists(r["shard_key"]) for r in out)
