"""The render's cache rule: a session's shot pack is trusted only if it matches its shard's record.

The render (:mod:`vismem.pipelines.memshot.render`) writes a session's pack, then its shard -- the
resumption marker. The shard records the pack's key, size and SHA-256 (``pack``), as a done
marker of :mod:`vismem.core.cache` records its objects. Before a re-run trusts a finished session
it reads the pack back: a pack truncated, overwritten, past its bound (``PACK_BYTES``) or missing,
a shard that is not JSON or past ``MAX_JSON_BYTES``, rows that are not unit rows of
:func:`unit_schema`, or a row referencing bytes outside the pack,
is named in one line, the shard is deleted and the session is rendered again (to the same bytes).
Shards written before packs were recorded carry no ``pack`` and are trusted as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from vismem.core.blobref import parse_ref
from vismem.core.bounds import PACK_BYTES
from vismem.core.cache import CacheDamaged, find_damage, read_recorded, record

if TYPE_CHECKING:
    import logging

    from vismem.core.store import Store

#: Concurrent reads while verifying: the packs of a whole dataset are read back on each re-run.
_THREADS = 8


def unit_schema() -> Any:
    """The Arrow schema of a shard's unit rows (and of the render's ``units.parquet``)."""
    import pyarrow as pa

    return pa.schema([
        ("dataset", pa.string()), ("variant", pa.string()), ("conversation_id", pa.string()),
        ("session_id", pa.string()), ("session_index", pa.int32()), ("unit", pa.int32()), ("unit_id", pa.string()),
        ("dia_ids", pa.list_(pa.string())), ("n_turns", pa.int32()), ("pair_start", pa.int32()),
        ("pair_end", pa.int32()), ("overlap_pairs", pa.int32()), ("width", pa.int32()), ("height", pa.int32()),
        ("overflow", pa.bool_()), ("key", pa.string()), ("format", pa.string()), ("bytes", pa.int64()),
        ("text", pa.string()), ("layout_ms", pa.float64()), ("draw_ms", pa.float64()), ("encode_ms", pa.float64()),
        ("write_ms", pa.float64()), ("style", pa.string()), ("font", pa.string()),
    ])


def pack_record(key: str, pack: bytes) -> dict[str, Any]:
    """What a shard keeps of its session's pack: key, size and content digest."""
    return {"key": key, **record(pack)}


def verify_shard(store: "Store", shard_key: str) -> str | None:
    """One line naming what is damaged of a finished session (its shard or its pack), else None.

    The shard is read as a JSON object of the store (at most ``MAX_JSON_BYTES``); its pack record
    must name this session's pack, and the pack is refused from its size past ``PACK_BYTES``
    unless the shard recorded that size (then the bound, not the cache, is at fault: TooLarge)."""
    from vismem.core.errors import TooLarge

    try:
        shard = store.get_json(shard_key)
    except FileNotFoundError:
        return None  # not finished: rendered anyway
    except TooLarge as err:  # a shard is a few KB of rows: one this large is not the one written
        return f"damaged cache marker {err}"
    except ValueError as err:
        return f"damaged cache marker {shard_key}: {err}"
    if not isinstance(shard, dict) or not isinstance(shard.get("rows"), list):
        return f"damaged cache marker {shard_key}: not a shard"
    misfit = _as_units(shard["rows"])[1]
    if misfit:
        return f"damaged cache marker {shard_key}: {misfit}"
    want = shard.get("pack")
    if not isinstance(want, dict):
        return None
    key = want.get("key")
    if key != pack_of(shard_key):
        return f"damaged cache marker {shard_key}: its pack record names {str(key)[:200]!r}, not {pack_of(shard_key)!r}"
    try:
        data = read_recorded(store, key, want, "the shard", bound=PACK_BYTES)
    except FileNotFoundError:
        return f"damaged cache object {key}: missing (its shard {shard_key} recorded it)"
    except CacheDamaged as err:
        return str(err)
    return _outside(shard_key, shard["rows"], key, len(data))


def pack_of(shard_key: str) -> str:
    """The pack a shard's session keeps its shots in (``.../shards/c/s.json`` -> ``.../shots/c/s.pack``)."""
    head, _, tail = shard_key.rpartition("/shards/")
    return f"{head}/shots/{tail.removesuffix('.json')}.pack"


def _as_units(rows: list[Any]) -> tuple[Any, str | None]:
    """``(Arrow table of rows, None)``, or ``(None, why)`` when they are not unit rows (a row that
    is no object, a value of the wrong type)."""
    import pyarrow as pa

    odd = next((i for i, row in enumerate(rows) if not isinstance(row, dict)), None)
    if odd is not None:  # pyarrow would make it a row of nulls
        return None, f"row {odd} is not an object"
    try:
        return pa.Table.from_pylist(rows, schema=unit_schema()), None
    except Exception as err:  # noqa: BLE001 - rows of the wrong shape or type: one line, not pyarrow's
        return None, f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"


def _outside(shard_key: str, rows: list[Any], pack: str, size: int) -> str | None:
    """One line when a row's shot reference points into another object or past the pack's end
    (a reader would fail on it later, or read another session's shots), else None."""
    for i, row in enumerate(rows):
        ref = parse_ref(row.get("key") or "") if isinstance(row, dict) and isinstance(row.get("key"), str) else None
        if ref is not None and (ref[0] != pack or ref[1] + ref[2] > size):
            return f"damaged cache marker {shard_key}: row {i} references {row['key'][:200]!r}, outside {pack} ({size:,} bytes)"
    return None


def damaged_shards(store: "Store", shard_keys: Iterable[str]) -> list[tuple[str, str]]:
    """``(shard key, line)`` of every damaged session among ``shard_keys`` (read concurrently)."""
    return find_damage(shard_keys, lambda k: verify_shard(store, k), _THREADS)


def heal_shards(store: "Store", shard_keys: Iterable[str], log: "logging.Logger") -> list[str]:
    """Verify finished sessions; delete the shard of every damaged one (so it is rendered again)
    and return one line per session healed, each naming the damaged object."""
    healed = []
    for key, line in damaged_shards(store, shard_keys):
        log.warning("%s: discarded, recomputing", line)
        store.delete(key)
        healed.append(line)
    return healed


def verify_renders(store: "Store", prefix: str = "runs", *, discard: bool = False) -> tuple[int, list[str]]:
    """Check every finished session under ``prefix`` (``.../shards/<conv>/<session>.json`` of a
    render): ``(sessions checked, one line per damaged one)``; ``discard`` deletes their shards."""
    keys = [k for k in store.iter_keys(prefix) if "/shards/" in k and k.endswith(".json")]
    bad = damaged_shards(store, keys)
    if discard:
        for key, _line in bad:
            store.delete(key)
    return len(keys), [line for _key, line in bad]


def shard_table(store: "Store", key: str, version: int) -> Any:
    """One shard's unit rows as an Arrow table of :func:`unit_schema`, the shard of schema
    ``version``; anything else is a DataError naming the shard, never a pyarrow traceback."""
    from vismem.core.errors import DataError

    hint = "; `vismem store verify --discard` drops it, the next run renders it again"
    try:
        shard = store.get_json(key)  # at most MAX_JSON_BYTES
    except FileNotFoundError:
        raise DataError(f"{store.url(key)}: shard missing; re-run the render to complete it") from None
    except ValueError as err:
        raise DataError(f"{store.url(key)}: damaged shard ({err}){hint}") from None
    if not isinstance(shard, dict) or not isinstance(shard.get("rows"), list):
        raise DataError(f"{store.url(key)}: damaged shard (not a shard){hint}")
    if shard.get("schema_version") != version:
        raise DataError(f"{store.url(key)}: shard schema_version {shard.get('schema_version')} != {version}; "
                        "render into a fresh prefix")
    table, misfit = _as_units(shard["rows"])
    if misfit:
        raise DataError(f"{store.url(key)}: damaged shard ({misfit}){hint}")
    return table
