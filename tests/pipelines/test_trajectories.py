"""Trajectory records and the (backend, seed, j) cache on the real weed S3 store."""

from __future__ import annotations

import io

import polars as pl

from vismem.pipelines.dmv.trajectories import BLOB_ROOT, TrajectoryCache, slugify
from vismem.agents.records import SessionResult, StepRecord, product_hash, steps_table, style_of_hash


def _step(j: int, step: int, url: str) -> StepRecord:
    h = product_hash(url)
    return StepRecord(backend="b", seed=3, j=j, category="chair", n_steps=2, step=step, url=url, title="t",
                      description="d", url_hash=h, style=style_of_hash().get(h) if h else None, image_key=None,
                      n_images=0, status="ok" if step == 1 else "invalid", action_type="navigate",
                      action_arg="/x", action_text='navigate("/x")', thought="go", reply="Thought: go\nAction: x",
                      error=None, exec_error=None, forced_nav=False, latency_s=0.1, prompt_tokens=10,
                      completion_tokens=None)


def test_style_lookup_and_product_hash() -> None:
    styles = style_of_hash()
    assert len(styles) == 1000 and styles["df5b5fde"] == "modern"  # chair|modern|00|v2
    assert product_hash("/product/df5b5fde?x=1") == "df5b5fde"
    assert product_hash("/collection/chair-modern") is None
    assert slugify("openai:Qwen/Qwen2.5-VL-7B") == "openai-qwen-qwen2.5-vl-7b"


def test_cache_roundtrip_on_s3(s3_store) -> None:
    cache = TrajectoryCache(s3_store, "scripted-test--00000000")
    res = SessionResult(backend=cache.backend, backend_name="x (stand-in)", stand_in=True, seed=3, j=1,
                        category="chair", n_steps=2,
                        steps=[_step(1, 1, "/product/df5b5fde"), _step(1, 2, "/product/df5b5fde")])
    assert cache.pending([(3, 0), (3, 1)]) == [(3, 0), (3, 1)]
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 20
    key = cache.put_blob(png)
    assert key.startswith(BLOB_ROOT) and key.endswith(".png") and s3_store.get_bytes(key) == png
    assert cache.put_blob(png) == key
    summary = cache.write(res)
    assert summary["visited"] == ["df5b5fde"] and summary["visits"] == 2 and summary["invalid_actions"] == 1
    assert cache.pending([(3, 0), (3, 1)]) == [(3, 0)]
    assert cache.done_keys() == {(3, 1)}
    df = cache.read_steps(3, 1)
    assert df.height == 2 and df["valid"].to_list() == [True, False]
    assert df["schema_version"].to_list() == [1, 1]
    assert df["completion_tokens"].null_count() == 2
    raw = pl.read_parquet(io.BytesIO(s3_store.get_bytes(cache.steps_key(3, 1))))
    assert raw.columns[:3] == ["backend", "seed", "j"]
    # A pickled cache (what a Ray worker receives) sees the same state.
    import pickle

    again = pickle.loads(pickle.dumps(cache))
    assert again.is_done(3, 1) and not again.is_done(3, 0)
    assert steps_table([]).height == 0
