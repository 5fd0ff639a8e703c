"""The render's cache rule: a session's shot pack is trusted only if it matches its shard's record.

The render (:mod:`vismem.pipelines.memshot.render`) writes a session's pack, then its shard -- the
resumption marker. The shard records the pack's key, size and SHA-256 (``pack``), as a done
marker of :mod:`vismem.core.cache` records its objects. Before a re-run trusts a finished session
it reads the pack back: a pack truncated or overwritten (or missing), or a shard that is not JSON,
is named in one line, the shard is deleted and the session is rendered again (to the same bytes).
Shards written before packs were recorded carry no ``pack`` and are trusted as they are.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from vismem.core.cache import find_damage, record

if TYPE_CHECKING:
    import logging

    from vismem.core.store import Store

#: Concurrent reads while verifying: the packs of a whole dataset are read back on each re-run.
_THREADS = 8


def pack_record(key: str, pack: bytes) -> dict[str, Any]:
    """What a shard keeps of its session's pack: key, size and content digest."""
    return {"key": key, **record(pack)}


def verify_shard(store: "Store", shard_key: str) -> str | None:
    """One line naming what is damaged of a finished session (its shard or its pack), else None."""
    try:
        shard = json.loads(store.get_bytes(shard_key))
    except FileNotFoundError:
        return None  # not finished: rendered anyway
    except ValueError as err:
        return f"damaged cache marker {shard_key}: {err}"
    if not isinstance(shard, dict) or not isinstance(shard.get("rows"), list):
        return f"damaged cache marker {shard_key}: not a shard"
    want = shard.get("pack")
    if not isinstance(want, dict):
        return None
    try:
        data = store.get_bytes(want["key"])
    except FileNotFoundError:
        return f"damaged cache object {want['key']}: missing (its shard {shard_key} recorded it)"
    got = record(data)
    if (got["bytes"], got["sha256"]) != (want.get("bytes"), want.get("sha256")):
        return (f"damaged cache object {want['key']}: {got['bytes']} bytes, sha256 {got['sha256'][:12]}, "
                f"the shard recorded {want.get('bytes')} bytes, sha256 {str(want.get('sha256'))[:12]}")
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
