"""Replay: cached trajectory step rows → observations → an architecture's bank (pure).

The official rules (``f2_session_runner._replay_trajectory``, spec §2):

* a *visit* is a step whose page at the *start* of the step is a product page (``url_hash`` set),
  unregistered product-shaped hashes included (category ``item``, usually no image);
* before replaying session ``j`` the architecture's clock is set to ``j``; the session's visits
  are walked in step order; a product already in the bank (from any session, or earlier in this
  one) is skipped, so a product stays where it was first encoded;
* the chain's sessions are replayed in order, and the bank after session ``j`` is what the probes
  of ``at_session = j`` query.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping

from vismem.memory.agent.types import MemoryArchitecture, Observation


@lru_cache(maxsize=1)
def category_of_hash() -> dict[str, str]:
    """Product hash → category slug, from the frozen v2 hash formula (the cue registry's rows)."""
    from vismem.env.storefront.catalog import CATEGORIES, STYLES, url_hash

    return {url_hash(c, s, i): c for c in CATEGORIES for s in STYLES for i in range(10)}


def _rows(steps: Any) -> Iterable[Mapping[str, Any]]:
    if hasattr(steps, "iter_rows"):  # a Polars frame (the trajectory cache's table)
        return steps.iter_rows(named=True)
    return (asdict(s) if is_dataclass(s) else s for s in steps)


def observations_from_steps(steps: Any) -> list[Observation]:
    """The visits of one chain's step rows (``vismem.agents.records.StepRecord``s, dicts, or a frame
    with the trajectory schema), in stream order (session, then step), positions 0..n-1."""
    from vismem.agents.records import style_of_hash

    cats, styles = category_of_hash(), style_of_hash()
    visits = sorted((r for r in _rows(steps) if r.get("url_hash")), key=lambda r: (int(r["j"]), int(r["step"])))
    chains = {(r.get("backend"), r.get("seed")) for r in visits}
    if len(chains) > 1:
        raise ValueError(f"steps of more than one chain given: {sorted(chains, key=str)}; split with chain_streams()")
    return [Observation(url=str(r.get("url") or f"/product/{r['url_hash']}"), url_hash=str(r["url_hash"]),
                        category=cats.get(r["url_hash"], "item"),
                        style=r.get("style") or styles.get(r["url_hash"]), j=int(r["j"]), step=int(r["step"]),
                        image_key=r.get("image_key") or None, position=i, backend=r.get("backend"),
                        seed=None if r.get("seed") is None else int(r["seed"]))
            for i, r in enumerate(visits)]


def bank_size_at(observations: Iterable[Observation], j: int) -> int:
    """The bank size of a probe issued after session ``j``: the chain's distinct products visited in
    sessions ``0..j`` (what the replay banks). A property of the probe, the same for every
    architecture — a memory that keeps nothing (NoMemory) still recalls at this bank size."""
    return len({o.url_hash for o in observations if o.j <= j})


def chain_streams(steps: Any) -> dict[tuple[Any, Any], list[Observation]]:
    """Step rows of many chains → ``{(backend, seed): observations}`` (each its own stream)."""
    by_chain: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for r in _rows(steps):
        by_chain.setdefault((r.get("backend"), r.get("seed")), []).append(r)
    return {k: observations_from_steps(v) for k, v in sorted(by_chain.items(), key=lambda kv: str(kv[0]))}


def replay_session(arch: MemoryArchitecture, observations: Iterable[Observation], j: int) -> int:
    """Replay session ``j``'s visits (others in ``observations`` are ignored); returns how many
    products were newly encoded."""
    arch.set_session(j)
    new = 0
    for obs in sorted((o for o in observations if o.j == j), key=lambda o: o.step):
        if obs.url_hash in arch:  # already banked, from this or any earlier session
            continue
        before = len(arch)
        arch.encode(obs)
        new += len(arch) - before
    return new


def replay_chain(arch: MemoryArchitecture, observations: Iterable[Observation], *,
                 sessions: Iterable[int] | None = None, reset: bool = True) -> Iterator[int]:
    """Replay a chain session by session, yielding ``j`` once session ``j`` is in the bank (run
    that session's probes then). ``sessions`` defaults to ``0..max j`` (sessions without a visit
    still advance the clock); ``reset`` empties the bank first (a new chain)."""
    obs = list(observations)
    if reset:
        arch.reset()
    js = sorted(set(sessions)) if sessions is not None else list(range(max((o.j for o in obs), default=-1) + 1))
    by_j: dict[int, list[Observation]] = {}
    for o in obs:
        by_j.setdefault(o.j, []).append(o)
    for j in js:
        replay_session(arch, by_j.get(j, ()), j)
        yield j
