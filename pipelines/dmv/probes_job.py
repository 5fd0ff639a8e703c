"""Probe workers: rebuild a chain's bank by replay, run its probes, cache the results.

One Ray Data row is one *unit*: (chain, architecture, recall session ``j``, probe set); a batch
is a chain's units (:func:`unit_groups`), so a chain's query embeddings are made once. A worker
holds a storefront and a page env, the recalling VLMs, the architectures bound to the stored
features (``vismem.pipelines.dmv.features``), and each chain's observations; for a unit it resets the
architecture, replays sessions ``0..j`` (cheap: features are cached) and runs the unit's probes
in the official order (by reach) with ``vismem.agents.recall.run_probe``. The unit's rows are written to
the probe cache, then its done marker (the commit point): a killed run re-runs only units
without one, and adding an architecture runs only its units.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from vismem.core.failures import cap_text, check_failed_calls
from vismem.pipelines.dmv.probecache import ProbeCache, probe_rows_table
from vismem.pipelines.dmv.shopworker import ShopWorker
from vismem.serve.build import build_vlm

if TYPE_CHECKING:
    from vismem.core.store import Store

log = logging.getLogger("vismem.probes")

#: Columns of the job's input rows (one per unit) and of its output rows (one per input row).
INPUT_COLUMNS = ("chain", "arch", "j", "set")
OUTPUT_COLUMNS = ("chain", "arch", "j", "set", "ok", "error", "summary")


class BlobCache:
    """``key -> bytes`` over a store reader, remembering what it read (LRU, bounded in bytes).

    Probe steps inject the same few memory images thousands of times; on the default local S3
    store each read is an HTTP round trip. The trajectory blobs are content-addressed
    (``blobs/sha256/<hex>``) and never rewritten, so a kept copy is always current.
    """

    def __init__(self, read: Any, max_bytes: int = 256 << 20) -> None:
        from collections import OrderedDict

        self.read, self.max_bytes = read, max_bytes
        self._data: "OrderedDict[str, bytes]" = OrderedDict()
        self._bytes = 0
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def __call__(self, key: str) -> bytes:
        with self._lock:  # a worker's episodes read at once
            data = self._data.get(key)
            if data is not None:
                self._data.move_to_end(key)
                self.hits += 1
                return data
        data = self.read(key)
        with self._lock:
            self.misses += 1
            if key not in self._data:
                self._data[key] = data
                self._bytes += len(data)
            while self._bytes > self.max_bytes and len(self._data) > 1:
                _, old = self._data.popitem(last=False)
                self._bytes -= len(old)
        return data


class ProbeWorker(ShopWorker):
    """Runs probe units and writes them to the probe cache.

    Args:
        store: the run's store (picklable).
        chains: ``[{"backend", "slug", "seed"}]`` in plan order; ``recallers`` the resolved recall
            VLM spec of each encode back-end (same order as ``encode.backends``).
        archs: raw architecture specs; ``arch_keys[arch][backend]`` their probe-cache keys.
        feature_specs: the ``vismem.memory.agent.FeatureSpec`` list every architecture reads.
        cues: ``url_hash -> [colour, depicted object]`` of the served catalogue.
        shop: ``ShopServer.from_data`` kwargs (data_dir, seed, colour_order, images).
        options: ``max_steps``, ``fetch_k``, ``keep_k``, ``max_tokens``, ``J`` (sessions to read), ``mc``,
            ``mc_seed``.
        env_factory: builds the page env on a shop URL (``vismem.pipelines.dmv.protocol.env_factory``).
    """

    error_cap = 500

    def __init__(self, store: "Store", *, chains: list[dict[str, Any]], recallers: list[dict[str, Any]],
                 archs: list[dict[str, Any]], arch_keys: list[list[str]], feature_specs: list[Any],
                 cues: dict[str, list[str]], shop: dict[str, Any], options: dict[str, Any], env_factory: Any,
                 env_kwargs: dict[str, Any] | None = None, shop_url: str | None = None, episodes: int = 1) -> None:
        from vismem.memory.agent import InProcessFeatures, build_architecture
        from vismem.memory.agent.features import FeatureTables
        from vismem.memory.agent.tables import TableFeatures
        from vismem.pipelines.dmv.features import load_parts

        _one_thread()
        self.store = store
        self.chains, self.recallers = chains, recallers
        self.arch_keys = arch_keys
        self.cues = {h: tuple(v) for h, v in cues.items()}
        self.options = dict(options)
        tables = FeatureTables()
        for fs in feature_specs:
            tables.add_spec(fs)
            target = {"caption": tables.captions, "image_embedding": tables.image_embeddings,
                      "text_embedding": tables.text_embeddings}[fs.kind]
            for cid, value in load_parts(store, fs).items():
                target[(fs.key, cid)] = value
        # Query embeddings depend on the step's URL: computed here (memoised), never stored.
        # Every probe step injects up to keep_k memory images: read each blob once per worker.
        self.blobs = BlobCache(store.get_bytes)
        self.features = TableFeatures(tables, read_blob=self.blobs, fallback=InProcessFeatures(self.blobs))
        self._arch_specs = list(archs)
        # A bank is replayed into its architecture per unit: threads running units at once each
        # hold their own instances (the features and blobs they read are shared).
        self._arch_local = threading.local()
        self._build_archs = lambda: [build_architecture(a, features=self.features) for a in self._arch_specs]
        self._arch_local.archs = self._build_archs()
        self._obs: dict[int, list[Any]] = {}
        self._start(shop_url=shop_url, shop=shop, env_factory=env_factory, env_kwargs=env_kwargs or {},
                    episodes=episodes)

    @property
    def archs(self) -> list[Any]:
        """The calling thread's architecture instances (built on its first unit)."""
        archs = getattr(self._arch_local, "archs", None)
        if archs is None:
            archs = self._arch_local.archs = self._build_archs()
        return archs

    def vlm(self, backend: int) -> Any:
        """The recalling VLM of encode back-end ``backend``."""
        return self._model(backend, lambda: build_vlm(self.recallers[backend]))

    def observations(self, chain: int) -> list[Any]:
        if chain not in self._obs:
            from vismem.pipelines.dmv.chains import Chain, chain_observations

            c = self.chains[chain]
            self._obs[chain] = chain_observations(self.store, Chain(c["backend"], c["slug"], c["seed"]),
                                                  int(self.options["J"]))
        return self._obs[chain]

    def unit_probes(self, chain: int, j: int, set_name: str) -> list[Any]:
        """The probes of a unit, in the official order (pure: from the chain's observations)."""
        from vismem.agents.probes import chain_probes, probes_at

        obs = self.observations(chain)
        visits: dict[int, list[str]] = {}
        for o in obs:
            visits.setdefault(o.j, []).append(o.url_hash)
        seed = int(self.chains[chain]["seed"])
        if set_name == "ex":
            probes = chain_probes(visits, j + 1, seed, self.cues.get)
        else:  # "mc<J>": the Monte Carlo draw of a chain of J sessions
            J = int(set_name[2:])
            probes = chain_probes(visits, J, seed, self.cues.get, mc=int(self.options["mc"]),
                                  mc_seed=str(self.options["mc_seed"]))
        return probes_at(probes, j)

    def run_unit(self, chain: int, arch: int, j: int, set_name: str) -> dict[str, Any]:
        """Replay sessions ``0..j`` into architecture ``arch`` and run the unit's probes."""
        from vismem.memory.agent import bank_size_at, replay_chain

        c = self.chains[chain]
        cache = ProbeCache(self.store, c["slug"], int(c["seed"]), self.arch_keys[arch][int(c["backend"])])
        if cache.is_done(set_name, j):
            return {**cache.read_summary(set_name, j), "cached": True}
        t0 = time.perf_counter()
        a = self.archs[arch]
        obs = self.observations(chain)
        for _ in replay_chain(a, obs, sessions=range(j + 1)):
            pass
        first_pos: dict[str, int] = {}
        for o in obs:
            first_pos.setdefault(o.url_hash, o.position)
        vlm = self.vlm(int(c["backend"]))
        probes = self.unit_probes(chain, j, set_name)
        # Every probe's first step starts at "/": embed those queries in one batch per encoder.
        from vismem.memory.agent import Query

        first = [Query.probe(p.cue, "/").text for p in probes]
        for fs in a.required_features():
            if fs.kind != "caption" and len(a):
                self.features.prefetch_queries(first, fs)
        bank = bank_size_at(obs, j)  # the probe's bank size, the same for every architecture
        # The probes of a unit read one replayed bank and nothing else they share: they run at
        # once (a unit's probes in sequence made the longest unit the stage's wall, the fleet
        # idle behind it); the rows keep the official order.
        rows = [{**res.row(), "bank_size": bank, "encoding_position": first_pos.get(p.target_hash)}
                for p, res in zip(probes, self._map(lambda p: self._probe(a, p, vlm), probes, inner=True))]
        failed = [s.get("error") for r in rows for s in r["log"] if s["status"] == "failed"]
        failed_calls = len(failed)
        # A unit whose recall calls mostly failed is an outage: not cached, no probe retried.
        check_failed_calls(failed_calls, sum(len(r["log"]) for r in rows), failed,
                           limit=float(self.options.get("max_failed_calls", 0.5)), field="probes.max_failed_calls",
                           what="recall-VLM calls")
        retried = self._retry_outages(a, probes, rows, vlm)
        for r in rows:  # a reply of any size is cut where it is stored; the step says so
            r["log"] = [_capped_step(s) for s in r["log"]]
        summary = cache.write(set_name, j, rows, meta={"architecture": a.name, "label": a.label,
                                                       "stand_in": bool(a.stand_in or getattr(vlm, "stand_in", False)),
                                                       "recaller": getattr(vlm, "display_name", None) or vlm.name,
                                                       "failed_calls": failed_calls, "retried_probes": retried})
        log.info("probes %s seed=%s %s s%d/%s: %d probes, %.1fs", c["slug"], c["seed"], a.name, j, set_name,
                 len(rows), time.perf_counter() - t0)
        return {**summary, "cached": False}

    def _probe(self, arch: Any, probe: Any, vlm: Any) -> Any:
        """One recall episode of ``probe`` against ``arch``'s bank (read-only)."""
        from vismem.agents.recall import run_probe
        from vismem.memory.agent import ArchitectureHook

        hook = ArchitectureHook(arch, probe.cue, fetch_k=int(self.options["fetch_k"]), keep_k=int(self.options["keep_k"]))
        res = run_probe(probe, vlm=vlm, env=self.env, memory=hook, max_steps=int(self.options["max_steps"]),
                        max_tokens=int(self.options["max_tokens"]), protocol=str(self.options.get("protocol", "fixed")))
        return res

    def _retry_outages(self, arch: Any, probes: list[Any], rows: list[dict[str, Any]], vlm: Any) -> int:
        """Re-run, one by one, every probe whose episode ended on a failed call (an outage, not a
        memory failure: scoring it would count the endpoint against the architecture), up to
        ``probe_retries`` times each; the episodes are deterministic (temperature 0, read-only bank),
        so a retry that gets model answers is the episode the outage interrupted. A probe still
        without one fails the unit (:class:`vismem.core.failures.UnitFailed`): nothing is cached,
        the stage ends partial and a re-run retries it. Returns the number of probes retried."""
        from vismem.core.failures import UnitFailed

        retries = int(self.options.get("probe_retries", 3))
        retried, lost = 0, []
        for i, p in enumerate(probes):
            if not _outage(rows[i]):
                continue
            retried += 1
            for _ in range(retries):
                res = self._probe(arch, p, vlm)
                if not _outage(row := res.row()):
                    rows[i] = {**rows[i], **row}
                    break
            else:
                lost.append(next((s.get("error") for s in rows[i]["log"] if s["status"] == "failed"), None))
        if lost:
            raise UnitFailed(f"{len(lost)} probes had no model answer after {retries} retries each "
                             f"(probes.probe_retries); first: {str(lost[0])[:200]}")
        return retried

    # Ray Data actor entry point: a batch of units (a chain's), one output row per input row.
    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        units = [(int(c), int(a), int(j), str(st)) for c, a, j, st in zip(batch["chain"], batch["arch"], batch["j"],
                                                                           batch["set"])]
        done = self._map(lambda u: self._run_one(lambda: self.run_unit(*u),
                                                 f"probe unit chain={u[0]} arch={u[1]} j={u[2]} {u[3]}"), units)
        out: dict[str, list[Any]] = {k: [] for k in OUTPUT_COLUMNS}
        for (chain, arch, j, set_name), (summary, err) in zip(units, done):
            for k, v in (("chain", chain), ("arch", arch), ("j", j), ("set", set_name), ("ok", err is None),
                         ("error", err), ("summary", json.dumps(summary, default=str) if summary else None)):
                out[k].append(v)
        return out


def _outage(row: dict[str, Any]) -> bool:
    """Whether a probe's episode was cut by a failed call (model or page), not ended by the model."""
    return any(s["status"] == "failed" for s in row["log"])


def _capped_step(step: dict[str, Any]) -> dict[str, Any]:
    """A step-log entry with its reply cut to :data:`vismem.core.failures.REPLY_CAP` (``reply_truncated``)."""
    reply, cut = cap_text(step.get("reply"))
    return {**step, "reply": reply, "reply_truncated": True} if cut else step


def _one_thread() -> None:
    """One torch thread per worker: probes embed one short query at a time, where more threads
    only contend (measured here: 18 ms per MiniLM query with one thread, 500 ms with two on a
    loaded 2-core machine); parallelism comes from the worker pool instead."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass


def unit_groups(units: list[dict[str, Any]], workers: int) -> list[list[dict[str, Any]]]:
    """``units`` grouped by chain for the actors, each group in plan order.

    A worker memoises query embeddings per query text (a probe step's cue and URL), and every
    unit of a chain asks about that chain's cues: units handed out one at a time put each chain
    on every actor, which embedded most queries once per actor (about half of the probes' CPU).
    A chain's units therefore go to one actor. So that no actor idles while another works
    through a last chain, the largest groups are halved until the group count is a multiple
    of ``workers`` (a halved chain may embed its queries twice; the rest stay shared).
    """
    by_chain: dict[int, list[dict[str, Any]]] = {}
    for u in units:
        by_chain.setdefault(int(u["chain"]), []).append(u)
    groups = list(by_chain.values())
    workers = max(1, workers)
    while len(groups) % workers:
        big = max(range(len(groups)), key=lambda i: len(groups[i]))
        if len(groups[big]) < 2:
            break
        g = groups.pop(big)
        groups[big:big] = [g[: len(g) // 2], g[len(g) // 2:]]
    return groups


def run_units(units: list[dict[str, Any]], worker_kwargs: dict[str, Any], *, on_ray: bool, ray_cfg: Any,
              workers: int) -> list[dict[str, Any]]:
    """Run units on Ray actors (or one in-process worker); one output row per unit, input order."""
    if not units:
        return []
    if not on_ray:
        w = ProbeWorker(**worker_kwargs)
        try:
            out = w({k: [u[k] for u in units] for k in INPUT_COLUMNS})
        finally:
            w.close()
        return [dict(zip(OUTPUT_COLUMNS, vals)) for vals in zip(*(out[k] for k in OUTPUT_COLUMNS))]
    import pyarrow as pa
    import ray.data

    from vismem.pipelines.dmv.protocol import GROUPS_AT_ONCE
    from vismem.pipelines.rayctx import actor_pool, collect

    groups = unit_groups(units, workers)
    # One block per group, each block one batch: a group runs on one actor (from_blocks keeps them).
    ds = ray.data.from_blocks([pa.Table.from_pylist(g) for g in groups])
    ds = ds.map_batches(ProbeWorker, fn_constructor_kwargs=worker_kwargs, batch_size=None,
                        **actor_pool(ray_cfg, size=min(workers, len(groups)), overlap=GROUPS_AT_ONCE))
    rows = collect(ds, "probes: units", total=len(units))
    if len(rows) != len(units):
        raise RuntimeError(f"probe job returned {len(rows)} rows for {len(units)} units")
    return rows


__all__ = ["ProbeWorker", "run_units", "unit_groups", "probe_rows_table"]
