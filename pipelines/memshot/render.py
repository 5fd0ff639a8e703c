"""Ray Data job: every session of a dataset → memory units (shots or text) in the store.

Input: one row per session (``INPUT_COLUMNS``); output: one row per input row
(``OUTPUT_COLUMNS``). Each task renders its sessions' units with ``vismem.memory.dialogue``, writes each
session's shots as one *pack* object, then a per-session *shard* (JSON, one row per unit), and
returns a one-row summary per session. The shard is written last, so its presence means the
session is complete: a re-run lists the shards once and renders only sessions without one.
Finally the driver concatenates the shards into ``units.parquet`` (``UNIT_SCHEMA``,
``schema_version`` = ``SCHEMA_VERSION``).

A pack is the session's shot files back to back (each a complete PNG or WebP); a unit row's
``key`` is a ``vismem.core.blobref`` reference ``<pack>#<offset>+<length>`` that ``Store.get_bytes``
reads like a key. One object per session instead of one per shot: on the local S3 server each
put costs ~0.85 ms of server CPU before its bytes (~9 µs per KiB), which made 1,835 puts for
LoCoMo cost about as much as drawing the shots.

Store layout under ``prefix``::

    variant.json                                   the variant (with style) the units were built with
    shots/<conversation>/<session>.pack            the session's shots back to back (image variants)
    shards/<conversation>/<session>.json           per-session unit rows and the pack's size and digest
                                                   (resumption marker: :mod:`.shotcache`)
    units.parquet                                  all unit rows, sorted by conversation/session/unit
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from vismem.env.dialogue.model import Conversation, session_from_dict
from vismem.memory.dialogue.png import SHOT_LEVEL
from vismem.memory.dialogue.variants import Variant
from vismem.core.blobref import make_ref
from vismem.core.envvars import env_int
from vismem.core.errors import ConfigError, DataError, user_error
from vismem.core.keys import key_part
from vismem.pipelines.memshot.sessions import session_rows, session_waves  # noqa: F401 - session_rows re-exported
from vismem.pipelines.memshot.shotcache import heal_shards, pack_record, shard_table, unit_schema

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext
    from vismem.core.store import Store

SCHEMA_VERSION = 2  # 2: shots packed per session, unit keys are blob references
#: Columns of the job's input rows (one per session).
INPUT_COLUMNS = ("dataset", "source", "conversation_id", "speakers", "session_id", "session_index", "session_json")
#: Columns of the job's output rows (one per input row).
OUTPUT_COLUMNS = ("conversation_id", "session_id", "n_units", "bytes", "shard_key", "render_s")
#: Columns of ``units.parquet`` (and of every shard), in order.
UNIT_COLUMNS = (
    "dataset", "variant", "conversation_id", "session_id", "session_index", "unit", "unit_id", "dia_ids",
    "n_turns", "pair_start", "pair_end", "overlap_pairs", "width", "height", "overflow", "key", "format",
    "bytes", "text", "layout_ms", "draw_ms", "encode_ms", "write_ms", "style", "font",
)
_safe = key_part  # injective: "conv 26" and "conv_26" are two keys


def shot_key(prefix: str, conversation_id: str, session_id: str, unit: int, fmt: str) -> str:
    return f"{prefix}/shots/{_safe(conversation_id)}/{_safe(session_id)}/u{unit:03d}.{fmt}"


def pack_key(prefix: str, conversation_id: str, session_id: str) -> str:
    """The object holding a session's shots back to back."""
    return f"{prefix}/shots/{_safe(conversation_id)}/{_safe(session_id)}.pack"


def shard_key(prefix: str, conversation_id: str, session_id: str) -> str:
    return f"{prefix}/shards/{_safe(conversation_id)}/{_safe(session_id)}.json"


def render_rows(rows: list[dict[str, Any]], *, store: "Store", variant: Variant, prefix: str,
                image_format: str = "png", compress_level: int = SHOT_LEVEL) -> list[dict[str, Any]]:
    """Render the sessions in ``rows``; write shots and one shard per session; one summary row each."""
    from vismem.memory.dialogue.render import session_units

    out = []
    font = Path(variant.style.font_regular).name
    # A session's pack is written by a background thread while the next session renders: on an
    # S3 store a put waits a round trip on the server, time this worker would otherwise idle.
    # A session's shard is written only once its pack is stored (the resumption marker).
    writer = _writer()
    pending: list[Any] = []
    for row in rows:
        t0 = time.perf_counter()
        conv = Conversation(dataset=row["dataset"], conversation_id=row["conversation_id"],
                            speakers=tuple(json.loads(row["speakers"])), sessions=(), source=row["source"])
        session = session_from_dict(json.loads(row["session_json"]))
        units = session_units(conv, session, variant, image_format=image_format, compress_level=compress_level)
        recs, shots, offset = [], [], 0
        pkey = pack_key(prefix, row["conversation_id"], row["session_id"])
        for u in units:
            key = None
            if u.image is not None:
                key = make_ref(pkey, offset, len(u.image))
                offset += len(u.image)
                shots.append(len(recs))
            recs.append({
                "dataset": conv.dataset, "variant": variant.name, "conversation_id": u.conversation_id,
                "session_id": u.session_id, "session_index": u.session_index, "unit": u.unit, "unit_id": u.unit_id,
                "dia_ids": list(u.dia_ids), "n_turns": len(u.dia_ids), "pair_start": u.pair_start,
                "pair_end": u.pair_end, "overlap_pairs": u.overlap_pairs, "width": u.width, "height": u.height,
                "overflow": u.overflow, "key": key, "format": image_format if key else "text",
                "bytes": len(u.image) if u.image is not None else len(u.text.encode()), "text": u.text,
                "layout_ms": u.layout_ms, "draw_ms": u.draw_ms, "encode_ms": u.encode_ms, "write_ms": 0.0,
                "style": variant.style.digest if variant.is_image else "", "font": font if variant.is_image else "",
            })
        skey = shard_key(prefix, row["conversation_id"], row["session_id"])
        put, packed = None, None
        if shots:
            pack = b"".join(u.image for u in units if u.image is not None)
            put, packed = writer.submit(_timed_put, store, pkey, pack, "application/octet-stream"), pack_record(pkey, pack)
        pending.append(writer.submit(_write_shard, store, skey, recs, shots, put, packed))
        out.append({"conversation_id": row["conversation_id"], "session_id": row["session_id"],
                    "n_units": len(units), "bytes": int(sum(r["bytes"] for r in recs)), "shard_key": skey,
                    "render_s": time.perf_counter() - t0})
    for f in pending:  # every shard (hence every shot) stored before the batch reports done
        f.result()
    return out


_WRITER: Any = None
#: Writer threads per process: enough to keep a put in flight while one waits on the server
#: (``$VISMEM_WRITE_THREADS``, 0 to 32, read when the first writer starts; None: not read yet).
WRITE_THREADS: int | None = None


class _Inline:
    """An executor that runs each call at once (``WRITE_THREADS = 0``)."""

    def submit(self, fn: Any, *args: Any) -> Any:
        from concurrent.futures import Future

        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except BaseException as err:  # noqa: BLE001 - re-raised by result(), as a pool would
            f.set_exception(err)
        return f


def _writer() -> Any:
    global _WRITER
    if _WRITER is None:
        from concurrent.futures import ThreadPoolExecutor

        n = WRITE_THREADS if WRITE_THREADS is not None else env_int("VISMEM_WRITE_THREADS", 2, lo=0, hi=32)
        _WRITER = ThreadPoolExecutor(n, thread_name_prefix="shot-writer") if n else _Inline()
    return _WRITER


def _timed_put(store: "Store", key: str, data: bytes, content_type: str) -> float:
    t1 = time.perf_counter()
    store.put_bytes(key, data, content_type=content_type)
    return (time.perf_counter() - t1) * 1e3


def _write_shard(store: "Store", skey: str, recs: list[dict[str, Any]], shots: list[int], put: Any,
                 packed: dict[str, Any] | None) -> None:
    """Wait for the session's pack (its write time, split evenly, goes into the shot rows), then
    write the shard (with ``packed``, the pack's record)."""
    if put is not None:
        ms = put.result() / len(shots)
        for i in shots:
            recs[i]["write_ms"] = ms
    # A JSON shard, not Parquet: a per-session Parquet write costs ~3 ms of writer set-up,
    # as much as rendering two shots; the driver turns the shards into units.parquet.
    shard = {"schema_version": SCHEMA_VERSION, "rows": recs, **({"pack": packed} if packed else {})}
    store.put_bytes(skey, json.dumps(shard).encode(),
                    content_type="application/json")


def _render_batch(batch: dict[str, Any], *, store: "Store", variant: Variant, prefix: str, image_format: str,
                  compress_level: int) -> dict[str, list]:
    """Ray Data ``map_batches`` adapter (column batch in, column batch out, same row count)."""
    n = len(batch["session_id"])
    rows = [{c: _py(batch[c][i]) for c in INPUT_COLUMNS} for i in range(n)]
    res = render_rows(rows, store=store, variant=variant, prefix=prefix, image_format=image_format,
                      compress_level=compress_level)
    return {c: [r[c] for r in res] for c in OUTPUT_COLUMNS}


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _check_variant(store: "Store", prefix: str, variant: Variant, image_format: str, compress_level: int) -> None:
    """Refuse to mix units of two different variant specs under one prefix."""
    key = f"{prefix}/variant.json"
    spec = {"variant": variant.model_dump(mode="json"), "style_digest": variant.style.digest,
            "image_format": image_format, "compress_level": compress_level, "schema_version": SCHEMA_VERSION}
    if store.exists(key):
        old = store.get_json(key)
        if old != json.loads(json.dumps(spec, sort_keys=True, default=str)):
            raise ConfigError(f"{store.url(prefix)} holds units of a different variant spec; use another prefix")
        return
    store.put_json(key, spec)


def _list_shards(store: "Store", prefix: str) -> list[str]:
    """Keys of the finished sessions' shards (``Store.list`` returns keys from the store root)."""
    return [k for k in store.list(f"{prefix}/shards") if k.endswith(".json")]


def render_units(store: "Store", conversations: Sequence[Conversation], variant: Variant | str, ray_cfg: Any,
                 prefix: str, *, image_format: str = "png", compress_level: int = SHOT_LEVEL, batch_size: int | None = None,
                 use_ray: bool = True) -> dict[str, Any]:
    """Build every unit of ``conversations`` for ``variant`` under ``prefix``; resumable.

    Sessions whose shard exists are skipped; ``use_ray=False`` renders in this process (tiny
    inputs, tests). Returns a summary; the unit table is at ``summary["table"]``.
    """
    from vismem.memory.dialogue.variants import load_variant

    if isinstance(variant, str):
        variant = load_variant(variant)
    prefix = prefix.strip("/")
    t0 = time.perf_counter()
    env_int("VISMEM_WRITE_THREADS", 2, lo=0, hi=32)  # a bad value fails here, before any work, not in a worker
    _check_variant(store, prefix, variant, image_format, compress_level)
    done = set(_list_shards(store, prefix))
    # Keys only here: the sessions' JSON is built a wave at a time below (session_waves).
    keys = [shard_key(prefix, c.conversation_id, s.session_id) for c in conversations for s in c.sessions if s.turns]
    # A finished session whose pack (or shard) is damaged is named, discarded and rendered again.
    healed = heal_shards(store, [k for k in keys if k in done], logging.getLogger("vismem"))
    if healed:
        done = set(_list_shards(store, prefix))
    n_todo = sum(k not in done for k in keys)
    kw = dict(store=store, variant=variant, prefix=prefix, image_format=image_format, compress_level=compress_level)
    results: list[dict[str, Any]] = []
    if n_todo and use_ray:
        from vismem.pipelines.rayctx import batch_size_for, init_ray

        init_ray(ray_cfg)
        if batch_size is None:  # from the whole job's size, so waves batch as one job would
            batch_size = batch_size_for(n_todo, ray_cfg.concurrency, least=4)
    skip = {k for k in keys if k in done}
    waves = session_waves(conversations, skip, key=lambda c, s: shard_key(prefix, c, s)) if n_todo else ()
    for wave in waves:
        results += _render_wave(wave, kw, ray_cfg, batch_size, use_ray)
    table_key = f"{prefix}/units.parquet"
    units = collect_units(store, prefix, keys=keys)
    store.write_table(table_key, units, schema_version=SCHEMA_VERSION)
    return {
        "variant": variant.name, "prefix": prefix, "table": table_key, "sessions": len(keys),
        "rendered_sessions": len(results), "skipped_sessions": len(keys) - n_todo, "healed": len(healed),
        "units": units.num_rows, "bytes": int(sum(units.column("bytes").to_pylist())),
        "rendered_units": int(sum(r["n_units"] for r in results)), "wall_s": time.perf_counter() - t0,
    }


def _render_wave(todo: list[dict[str, Any]], kw: dict[str, Any], ray_cfg: Any, batch_size: int | None,
                 use_ray: bool) -> list[dict[str, Any]]:
    """Render one wave's sessions (a Ray Data job, or in this process); one summary row each."""
    what = f"memshot: rendering {kw['variant'].name} sessions"
    if not use_ray:
        from vismem.core.progress import track

        return [r for row in track(todo, what, total=len(todo)) for r in render_rows([row], **kw)]
    import ray.data

    from vismem.pipelines.rayctx import collect, task_pool

    bs = batch_size or len(todo)
    ds = ray.data.from_items(todo, override_num_blocks=max(1, min(len(todo), -(-len(todo) // bs))))
    out = ds.map_batches(_render_batch, fn_kwargs=kw, batch_size=bs, batch_format="numpy", **task_pool(ray_cfg))
    try:
        results = collect(out, what, total=len(todo))
    except Exception as err:  # a DataError raised in a worker reaches us wrapped by Ray
        raise user_error(err) or err
    if len(results) != len(todo):  # one output row per input row, or the stage is broken
        raise RuntimeError(f"render job returned {len(results)} rows for {len(todo)} sessions")
    return results


def collect_units(store: "Store", prefix: str, keys: Iterable[str] | None = None) -> Any:
    """Concatenate the shards ``keys`` (default: every shard under ``prefix``) into one Arrow
    table sorted by position; a missing shard is an error (the render did not finish), and so is
    one that is not a shard of this schema (one line naming it, never a pyarrow traceback)."""
    import pyarrow as pa

    keys = sorted(_list_shards(store, prefix) if keys is None else keys)
    tables = [shard_table(store, k, SCHEMA_VERSION) for k in keys]
    t = pa.concat_tables(tables) if tables else unit_schema().empty_table()
    return t.sort_by([("conversation_id", "ascending"), ("session_index", "ascending"), ("unit", "ascending")])


def read_units(store: "Store", prefix: str) -> Any:
    """The units table of a finished render as a Polars DataFrame."""
    return store.read_table(f"{prefix.strip('/')}/units.parquet")


# -- entry points for the `memshot` stage ---------------------------------------------------------

def units_prefix(run_prefix: str, dataset: str, variant: str) -> str:
    """Where a run keeps one variant's units: ``<run_prefix>/memshot/<dataset>/<variant>``."""
    return f"{run_prefix.strip('/')}/memshot/{dataset}/{variant}"


def dataset_path(cfg: Any, data_dir: str | Path) -> Path:
    """The file a ``MemShotConfig`` names for its dataset (relative paths under ``data_dir``).

    ``memshot.dataset_path``, else the dataset's default location.
    """
    from vismem.memory.dialogue.datasets import get_dataset

    ds = get_dataset(cfg.dataset)
    raw = cfg.dataset_path or ds.default_path
    if not raw:
        raise ConfigError(f"memshot.dataset is {ds.name!r} but no file is given: set memshot.dataset_path; "
                          f"{ds.name} is not shipped with the project (`vismem data` lists what can be fetched)")
    path = Path(raw)
    return path if path.is_absolute() else Path(data_dir) / path


def load_conversations(cfg: Any, data_dir: str | Path) -> list[Conversation]:
    """The conversations a ``MemShotConfig`` asks for."""
    from vismem.memory.dialogue.datasets import get_dataset

    return get_dataset(cfg.dataset).load(dataset_path(cfg, data_dir), limit=cfg.conversations)


def render_all(store: "Store", cfg: Any, conversations: list[Conversation], ray_cfg: Any, run_prefix: str, *,
               use_ray: bool = True) -> dict[str, dict[str, Any]]:
    """Render every variant of ``cfg.variants``; ``{variant: summary}`` (tables under ``summary['table']``)."""
    out = {}
    for name in cfg.variants:
        prefix = units_prefix(run_prefix, cfg.dataset, name)
        out[name] = render_units(store, conversations, name, ray_cfg, prefix, image_format=cfg.image_format,
                                 compress_level=cfg.png_compress_level, batch_size=cfg.render_batch_size,
                                 use_ray=use_ray)
    return out


@dataclass
class RenderJobResult:
    """What the ``memshot`` stage gets from rendering.

    ``units``: every variant's unit rows (``UNIT_COLUMNS`` + ``modality`` "image"/"text",
    ``image_key`` = store key of the shot or null, ``unit_index``); ``render_seconds``: one row per
    (conversation_id, variant) with ``render_s`` = layout + draw + encode + write seconds of its
    units (as recorded when rendered, so a resumed run reports the same); ``summaries``: the
    per-variant job summaries.
    """

    units: Any
    render_seconds: Any
    conversations: list[Conversation]
    summaries: dict[str, dict[str, Any]]


def units_frame(store: "Store", prefixes: Iterable[str]) -> Any:
    """The stage's units frame from finished renders under ``prefixes`` (pure post-processing)."""
    import polars as pl

    parts = [read_units(store, p) for p in prefixes]
    df = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
    return df.with_columns(
        pl.when(pl.col("key").is_null()).then(pl.lit("text")).otherwise(pl.lit("image")).alias("modality"),
        pl.col("key").alias("image_key"), pl.col("unit").alias("unit_index"))


def render_seconds(units: Any) -> Any:
    """Render seconds per (conversation_id, variant) from the recorded per-unit phase times."""
    import polars as pl

    return (units.group_by(["conversation_id", "variant"], maintain_order=True)
            .agg(((pl.col("layout_ms") + pl.col("draw_ms") + pl.col("encode_ms") + pl.col("write_ms")).sum() / 1e3)
                 .alias("render_s"))
            .sort(["variant", "conversation_id"]))


def run_render_job(ctx: "RunContext") -> RenderJobResult:
    """Render every ``ctx.config.memshot.variants`` under ``<run_prefix>/memshot/<dataset>/<variant>``."""
    cfg = ctx.config.memshot
    conversations = load_conversations(cfg, ctx.data_dir)
    summaries = render_all(ctx.store, cfg, conversations, ctx.config.ray, ctx.run_prefix)
    units = units_frame(ctx.store, [s["prefix"] for s in summaries.values()])
    return RenderJobResult(units, render_seconds(units), conversations, summaries)
