"""What the DMV-Bench memory stages share: the run's chains, their observations, its architectures.

A *chain* is one browsing back-end's sessions of one seed in the trajectory cache
(``vismem.pipelines.dmv.trajectories``); the ``replay`` and ``probes`` stages read the chains the
``encode`` stage planned (same back-end specs and cache slugs, same seeds), session ``j`` for
``j < encode.J``, and turn their step rows into memory observations
(``vismem.memory.agent.observations_from_steps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.core.store import Store
    from vismem.pipelines.context import RunContext


@dataclass(frozen=True)
class Chain:
    """One chain: encode back-end ``backend`` (its index in ``encode.backends``), cache ``slug``, ``seed``."""

    backend: int
    slug: str
    seed: int


def plan_chains(config: "RunConfig") -> list[Chain]:
    """Every chain of the run's encode plan, in plan order."""
    from vismem.pipelines.dmv.protocol import plan

    _, slugs, keys = plan(config)
    seen: dict[tuple[int, int], None] = {}
    for b, s, _j in keys:
        seen.setdefault((b, s), None)
    return [Chain(b, slugs[b], s) for b, s in seen]


def missing_sessions(store: "Store", chains: list[Chain], J: int) -> list[tuple[str, int, int]]:
    """``(slug, seed, j)`` of sessions ``j < J`` the trajectory cache does not hold as trajectories:
    absent, or finished with a failed model call (:func:`outage_cached`)."""
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    out = []
    for slug in dict.fromkeys(c.slug for c in chains):
        done = TrajectoryCache(store, slug).done_keys()
        out += [(slug, c.seed, j) for c in chains if c.slug == slug for j in range(J) if (c.seed, j) not in done]
    return sorted(out + outage_cached(store, chains, J))


def outage_cached(store: "Store", chains: list[Chain], J: int) -> list[tuple[str, int, int]]:
    """``(slug, seed, j)`` of finished sessions ``j < J`` whose steps record a failed model call (an
    outage cached before the encode stage browsed such sessions again): never read as a trajectory
    -- a stage that reads chains refuses them and the encode stage browses them again."""
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    out = []
    for slug in dict.fromkeys(c.slug for c in chains):
        cache = TrajectoryCache(store, slug)
        done = cache.done_keys()
        out += [(slug, c.seed, j) for c in chains if c.slug == slug for j in range(J)
                if (c.seed, j) in done and cache.failed_calls(c.seed, j)]
    return out


def chain_steps(store: "Store", chain: Chain, J: int) -> Any:
    """The step rows of a chain's sessions ``0..J-1`` as one Polars frame (session, then step)."""
    import polars as pl

    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    cache = TrajectoryCache(store, chain.slug)
    return pl.concat([cache.read_steps(chain.seed, j) for j in range(J)], how="vertical_relaxed")


def chain_observations(store: "Store", chain: Chain, J: int) -> list[Any]:
    """A chain's visits (``vismem.memory.agent.Observation``) in stream order."""
    from vismem.memory.agent import observations_from_steps

    return observations_from_steps(chain_steps(store, chain, J))


def architecture_specs(config: "RunConfig") -> list[dict[str, Any]]:
    """The configured architectures with ``memory.components`` laid over each (raw specs)."""
    from vismem.memory.agent import ARCHITECTURES, with_components

    comps = dict(config.memory.components)
    out = []
    for i, spec in enumerate(config.memory.architectures):
        ARCHITECTURES.resolve(spec.raw(), field=f"memory.architectures[{i}]")  # names the field when unknown
        raw = pin_deployed(with_components(spec, comps) if comps else spec.raw())
        out.append(_catalogue_reads_run_data(raw, str(config.data_dir)))
    return out


def _catalogue_reads_run_data(spec: Any, data_dir: str) -> Any:
    """The ``catalogue`` captioner stand-in reads product attributes from the run's ``data_dir``
    (not the checkout's default, absent in a submitted job's package); ``data_dir`` is a transport
    arg, so no cache key changes."""
    if isinstance(spec, dict):
        out = {}
        for k, v in spec.items():
            if k == "captioner" and (v == "catalogue" or (isinstance(v, dict) and v.get("name") == "catalogue")):
                args = dict(v.get("args") or {}) if isinstance(v, dict) else {}
                args.setdefault("data_dir", data_dir)
                v = {"name": "catalogue", "args": args}
            out[k] = _catalogue_reads_run_data(v, data_dir)
        return out
    if isinstance(spec, list):
        return [_catalogue_reads_run_data(v, data_dir) for v in spec]
    return spec


def pin_deployed(spec: Any) -> Any:
    """``spec`` with every ``deployed:NAME`` component replaced by its resolved client spec.

    Workers (Ray Data actors, a cluster's nodes) rebuild the architectures from these specs but
    cannot see the driver's deployment state (``vismem serve up``'s state file, or a
    ``VISMEM_SERVE_URL`` set after the workers started): the driver, which can, pins the endpoint.
    """
    from vismem.serve.hosting import DEPLOYED_PREFIX, deployable

    def registry(name: str) -> Any:
        from vismem.serve.registry import EMBEDDERS, VLMS, registered

        return VLMS if deployable(name, registered()).kind == "vlm" else EMBEDDERS

    if isinstance(spec, str) and spec.startswith(DEPLOYED_PREFIX):
        return registry(spec[len(DEPLOYED_PREFIX):]).resolve(spec)
    if isinstance(spec, dict):
        ref = spec.get("model") or spec.get("name")
        if isinstance(ref, str) and ref.startswith(DEPLOYED_PREFIX):
            return registry(ref[len(DEPLOYED_PREFIX):]).resolve(spec)
        return {k: pin_deployed(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [pin_deployed(v) for v in spec]
    return spec


def build_architectures(config: "RunConfig", features: Any = None) -> list[Any]:
    """Every configured architecture, built (ConfigError naming the field on a bad spec)."""
    from vismem.memory.agent import build_architecture

    return [build_architecture(spec, features=features, field=f"memory.architectures[{i}]")
            for i, spec in enumerate(architecture_specs(config))]


def variant_info(arch: Any) -> dict[str, Any]:
    """Study, labels and the studies it is a reference row of, for a built architecture."""
    from vismem.memory.agent.variants import list_variants, load_variant

    name = getattr(arch, "variant", None) or arch.name
    if name in list_variants():
        v = load_variant(name)
        return {"study": v.study, "also": list(v.also), "labels": dict(v.labels)}
    return {"study": "main", "also": [], "labels": {}}


def load_run_chains(ctx: "RunContext") -> dict[Any, list[Any]]:
    """``{Chain: observations}`` of the run (ConfigError naming missing sessions)."""
    from vismem.core.errors import ConfigError

    J = ctx.config.encode.J
    chains = plan_chains(ctx.config)
    missing = missing_sessions(ctx.store, chains, J)
    if missing:
        shown = ", ".join(f"{s} seed {seed} j={j}" for s, seed, j in missing[:5])
        outages = len(outage_cached(ctx.store, chains, J))
        lacks = (f"replay needs {len(missing)} encoding session(s) the trajectory cache lacks ({shown}"
                 f"{', ...' if len(missing) > 5 else ''})"
                 + (f"; {outages} of them cached with a failed model call (an outage, not a trajectory: "
                    "the encode stage browses them again)" if outages else ""))
        encode = ctx.manifest.data.get("stages", {}).get("encode", {}) if ctx.manifest is not None else {}
        if encode.get("status") in ("partial", "failed"):
            # This run's encode left them out (its failures were reported): not a missing stage.
            from vismem.core.errors import VismemError

            why = encode.get("error") or (encode.get("summary") or {}).get("failure") or "see its failures"
            raise VismemError(f"{lacks}: this run's encode stage ended {encode['status']} without them ({why}); "
                              "re-run to retry them")
        raise ConfigError(f"{lacks}; run the encode stage first")
    out = {c: chain_observations(ctx.store, c, J) for c in chains}
    refuse_damaged_images(ctx, out)
    return out


def refuse_damaged_images(ctx: "RunContext", chains: dict[Any, list[Any]]) -> None:
    """Check every image the chains' visits observed (its key is its digest) before a stage reads
    them: a damaged one is named in the log and deleted with every session that showed it (and the
    probe units that read those), and the stage is refused in one line naming the encode stage,
    which browses them again (and so writes the image back)."""
    from vismem.core.cache import CacheDamaged
    from vismem.pipelines.dmv.trajectories import drop_damaged_blobs

    shown: dict[str, set[tuple[str, int, int]]] = {}
    for c, obs in chains.items():
        for o in obs:
            if o.image_key:
                shown.setdefault(o.image_key, set()).add((c.slug, c.seed, o.j))
    dropped = drop_damaged_blobs(ctx.store, shown)
    if not dropped:
        return
    for key, line, _units in dropped:
        ctx.logger.warning("%s: discarded with the %d session(s) that showed it", line, len(shown[key]))
    sessions = set().union(*(shown[key] for key, _, _ in dropped))
    raise CacheDamaged(f"{len(dropped)} image(s) the cached sessions observed are damaged ({dropped[0][1]}): "
                      f"discarded with the {len(sessions)} session(s) that showed them; run the encode stage to "
                      "browse them again")
