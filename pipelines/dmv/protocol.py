"""DMV-Bench's protocol identity, in one place: what a session, a chain and an image set are.

Everything that decides whether two runs may share cached work lives here: the encode plan
(back-ends x chains x sessions, :func:`plan`), the session options, the served images' identity
(:func:`images_identity`, the catalogue's content-addressed prefix), the trajectory cache slugs
(:func:`cache_slug`: the model spec's content key, plus the protocol), readable
back-end labels and the page-env factory. Stages, jobs and caches read it; it reads no stage.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vismem.core.identity import content_digest, content_key
from vismem.pipelines.dmv.trajectories import PROTOCOL_VERSION, slugify

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext
    from vismem.pipelines.config import RunConfig
    from vismem.agents.session import SessionOptions


#: Where the replay stage writes a run's bank entries (what each architecture wrote per product),
#: under the run's prefix; the trajectory viewer reads it. Not a results table.
BANK_ENTRIES_KEY = "memory/bank_entries.parquet"


def resolve_spec(spec: Any, run_seed: int, *, field: str = "encode.backends") -> dict[str, Any]:
    """A buildable ``{name, args}`` spec (a model variant such as ``qwen2.5-vl-7b`` expanded,
    env-expanded here on the driver). The scripted shopper's seed defaults to the run seed."""
    from vismem.serve.registry import VLMS

    spec = VLMS.check(spec, field=field)  # args checked against the backend, nothing built
    if spec["name"] == "scripted-shopper":
        spec["args"].setdefault("seed", run_seed)
    return spec


def is_stand_in(spec: dict[str, Any]) -> bool:
    """Whether a resolved backend spec builds a stand-in (as its factory declared)."""
    from vismem.serve.registry import VLMS

    return VLMS.is_stand_in(spec)


def backend_label(spec: dict[str, Any]) -> str:
    """A readable backend name from its spec (no model needs loading)."""
    args = spec.get("args") or {}
    if spec["name"] == "scripted-shopper":
        return f"scripted-shopper-stand-in-s{args.get('seed', 0)}"
    label = args.get("label") or args.get("model") or (Path(str(args["path"])).name if args.get("path") else None)
    return f"{spec['name']}-{label}" if label else spec["name"]


def protocol_settings(opts: SessionOptions, *, observation: str, images: Any, colour_order: str,
                      catalog_seed: int, catalog_data: dict[str, str] | None = None) -> dict[str, Any]:
    """Everything besides the model that changes what a session produces.

    ``catalog_data``: content digests of the catalogue files the shop is built from (its pages
    are what the agent reads), so an edited catalogue never reuses another's trajectories.
    """
    from vismem.agents import prompts

    out = {"prompts": prompts.fingerprint("encode", opts.protocol),
           "page_text": opts.page_text, "max_tokens": opts.max_tokens, "temperature": opts.temperature,
           "observation": observation, "images": images, "colour_order": colour_order,
           "catalog_seed": catalog_seed}
    if opts.protocol != "fixed":  # only a non-default protocol enters the key: `fixed` keys stay as they were
        out["protocol"] = opts.protocol
    if catalog_data is not None:
        out["catalog_data"] = dict(sorted(catalog_data.items()))
    return out


def cache_slug(spec: dict[str, Any], protocol: dict[str, Any]) -> str:
    """``<label>--<8 hex>``: the hash covers the model args (:func:`vismem.core.identity.content_key`)
    and the protocol."""
    doc = {"v": PROTOCOL_VERSION, "name": spec["name"], "args": content_key(spec.get("args") or {}), **protocol}
    return f"{slugify(backend_label(spec))}--{content_digest(doc, 8)}"


def default_env_factory(shop_url: str, *, observation: str, step_timeout_s: float) -> Any:
    """The Playwright browser environment (``vismem.env.browser``)."""
    from vismem.env.envs import make_env

    return make_env("browser", shop_url, observation=observation, step_timeout_s=step_timeout_s)


def env_factory(name: str) -> Any:
    """The env factory for ``encode.env``: ``browser`` (Chromium) or ``http`` (fast path)."""
    from functools import partial

    from vismem.env.envs import ENVS, make_env

    if name not in ENVS:
        raise ValueError(f"unknown env {name!r}; allowed: {', '.join(ENVS.names())}")
    return default_env_factory if name == "browser" else partial(make_env, "http")


def source_spec(cfg: Any) -> dict[str, Any]:
    """The image source spec ``{name, args}`` the workers build (size/format folded in for procedural)."""
    from vismem.env.storefront.imagesource import IMAGE_SOURCES

    resolved = IMAGE_SOURCES.resolve(cfg.image_source, field="catalog.image_source")
    args = dict(resolved["args"])
    if resolved["name"] == "procedural":
        args.setdefault("size", cfg.image_size)
        args.setdefault("format", cfg.image_format)
        args.setdefault("compress_level", cfg.png_compress_level)
    return {"name": resolved["name"], "args": args}


def public_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without credentials (what goes into params.json, the manifest and the pointer;
    :mod:`vismem.core.secrets` says what a credential is)."""
    from vismem.core.secrets import drop_secrets

    return {"name": spec["name"], "args": drop_secrets(dict(spec["args"]))}


def image_params(cfg: Any, variants: Any) -> dict[str, Any]:
    """Everything the stored pixels depend on (hashed into the prefix)."""
    from vismem.env.storefront.images.scene import RENDERER_VERSION

    assignment = "\n".join(f"{v.url_hash}:{v.cat}:{v.style}:{v.idx}:{v.cue_object}:{v.cue_color}:{v.image_idx}"
                           for v in sorted(variants, key=lambda v: v.url_hash))
    spec = source_spec(cfg)
    return {
        "source": public_spec(spec),
        "renderer": RENDERER_VERSION if spec["name"] == "procedural" else None,
        "size": cfg.image_size, "format": cfg.image_format, "png_compress_level": cfg.png_compress_level,
        "assignment_sha256": hashlib.sha256(assignment.encode()).hexdigest(),
    }


def params_hash(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


def images_identity(config: "RunConfig") -> Any:
    """What the served pixels are, for the cache key: the catalogue image prefix, or the spec."""
    if config.encode.images != "catalog":
        return config.encode.images
    from vismem.pipelines.context import catalog_from_config

    return f"catalog/{params_hash(image_params(config.catalog, catalog_from_config(config).variants))}"


def image_source(ctx: "RunContext") -> Any:
    """The image-source spec the workers' storefronts use (see ``EncodeConfig.images``)."""
    cfg = ctx.config
    if cfg.encode.images != "catalog":
        return cfg.encode.images

    pointer_key = f"{ctx.run_prefix}/catalog.json"
    if ctx.store.exists(pointer_key):
        pointer = ctx.store.get_json(pointer_key)
        # Only a complete image set (a `catalog.limit` run stores just the first N products).
        if (pointer.get("prefix") == images_identity(cfg) and pointer.get("serve_spec")
                and pointer.get("variants", 0) >= 1000):
            spec = pointer["serve_spec"]
            st = ctx.store.spec
            if ctx.store.is_s3:  # workers may not share the driver's environment
                spec = {"name": spec["name"], "args": {**spec["args"], "endpoint_url": st.endpoint_url,
                                                        "region": st.region, "access_key": st.access_key,
                                                        "secret_key": st.secret_key,
                                                        "session_token": st.session_token}}
            return spec
    return source_spec(cfg.catalog)


def plan(config: "RunConfig") -> tuple[list[dict[str, Any]], list[str], list[tuple[int, int, int]]]:
    """Resolved backend specs, their cache slugs and every ``(backend index, seed, j)`` key."""

    enc = config.encode
    specs = [resolve_spec(s, config.seed) for s in enc.backends]
    catalog_data = {k: v for k, v in config.input_digests().items() if k.startswith("dmv-bench/")}
    proto = protocol_settings(options(config), observation=enc.observation, images=images_identity(config),
                              colour_order=config.catalog.colour_order, catalog_seed=config.seed,
                              catalog_data=catalog_data)
    slugs = [cache_slug(s, proto) for s in specs]
    if len(set(slugs)) != len(slugs):
        from vismem.core.errors import ConfigError

        raise ConfigError(f"encode.backends has duplicate backends: {slugs}")
    seeds = chain_seeds(config)
    keys = [(b, s, j) for b in range(len(specs)) for s in seeds for j in range(enc.J)]
    return specs, slugs, keys


def chain_seeds(config: "RunConfig") -> list[int]:
    """The seed of each chain index ``i`` of every back-end: ``encode.first_seed + i`` (the run seed first)."""
    enc = config.encode
    first = config.seed if enc.first_seed is None else enc.first_seed
    return [first + i for i in range(enc.chains)]


def ablation_seeds(config: "RunConfig") -> list[int] | None:
    """Seeds of ``probes.ablation_chains`` (the chains ``probes.ablation_architectures`` are
    probed on): the first N chains, or the listed chain indices; None: every chain. An index
    the run lacks is a ConfigError naming the field."""
    sub, seeds = config.probes.ablation_chains, chain_seeds(config)
    if sub is None:
        return None
    if isinstance(sub, int):
        return seeds[:sub]
    bad = [i for i in sub if i >= len(seeds)]
    if bad:
        from vismem.core.errors import ConfigError

        raise ConfigError(f"probes.ablation_chains: chain index {bad[0]} is not among the run's {len(seeds)} chains "
                          f"(indices 0-{len(seeds) - 1}, encode.chains)")
    return [seeds[i] for i in sub]


def probed_pairs(config: "RunConfig") -> int:
    """(chain, architecture) pairs each back-end probes: every architecture on every chain, less
    the chains outside ``probes.ablation_chains`` for ``probes.ablation_architectures``."""
    archs, chains = config.memory.architectures, config.encode.chains
    sub = ablation_seeds(config)
    if sub is None:
        return len(archs) * chains
    only = sum(1 for a in archs if a.name in config.probes.ablation_architectures)
    return (len(archs) - only) * chains + only * len(sub)


def options(config: "RunConfig") -> Any:
    from vismem.agents.session import SessionOptions

    enc = config.encode
    return SessionOptions(page_text=enc.page_text, max_tokens=enc.max_tokens, temperature=enc.temperature,
                          protocol=enc.protocol)


def storefront_inputs(config: "RunConfig", data_dir: Path) -> dict[str, Path]:
    """The catalogue files every DMV-Bench stage reads (its pages are what agents browse), by role."""
    from vismem.env.storefront.catalog import CUE_FILE, SEED_FILE, dmv_dir

    d = dmv_dir(data_dir)
    return {f"dmv-bench/{SEED_FILE}": d / SEED_FILE, f"dmv-bench/{CUE_FILE}": d / CUE_FILE}


#: Probe unit groups (a chain's units) an actor runs at once: the next chain's probes start
#: while the last ones of the current finish, so the fleet never drains to a chain's tail.
GROUPS_AT_ONCE = 2


def episodes_per_actor(in_flight: int | None, specs: list[dict[str, Any]], actors: int) -> int:
    """Units one actor runs at once so that ``actors`` together keep ``in_flight`` in flight.

    ``in_flight`` None: the back-ends' own client limits summed (each client caps its in-flight
    requests with ``max_concurrency``; a back-end without one -- a scripted stand-in -- counts
    one per actor, the sequential path).
    """
    actors = max(1, actors)
    if in_flight is None:
        caps = [int((s.get("args") or {}).get("max_concurrency") or 0) for s in specs]
        if not any(caps):
            return 1
        in_flight = sum(c or actors for c in caps)
    return max(1, -(-int(in_flight) // actors))


def fleet_shortfall(raw_specs: list[Any], in_flight: int | None, actors: int) -> list[str]:
    """One line per back-end whose deployment the stage cannot fill: the requests the stage keeps
    in flight for it are fewer than its fleet takes at full scale (``max_replicas`` x
    ``target_ongoing_requests``), so Serve's autoscaler never reaches ``max_replicas``.

    ``raw_specs``: the stage's back-ends as configured; only named model variants with a
    ``deploy:`` block have a fleet (a hosted API or a bare spec has none to fill).
    """
    from vismem.serve.registry import fleet_of

    out = []
    for raw in raw_specs:
        d = fleet_of(raw)
        if d is None:
            continue
        key = getattr(raw, "key", raw if isinstance(raw, str) else None)
        capacity = int(d.settings.max_replicas * d.settings.target_ongoing_requests)
        cap = int(d.client_args.get("max_concurrency") or 0)
        # The stage's units interleave its back-ends: each gets its share of in_flight (as the plan counts).
        sent = in_flight // max(1, len(raw_specs)) if in_flight is not None else cap or max(1, actors)
        if sent < capacity:
            out.append(f"{key}: {sent} requests in flight can keep {sent / d.settings.target_ongoing_requests:.1f} "
                       f"of its {d.settings.max_replicas} replicas busy (max_replicas {d.settings.max_replicas} x "
                       f"target_ongoing_requests {d.settings.target_ongoing_requests:g} = {capacity}): raise the "
                       f"stage's in_flight to {capacity}")
    return out


def cue_lookup(config: "RunConfig") -> dict[str, list[str]]:
    """``url_hash -> [colour, object as drawn]`` of the served catalogue (the probe's cue phrase
    names the object actually in the pixels: procedural images draw a substitute for a few)."""
    from vismem.pipelines.context import catalog_from_config

    cat = catalog_from_config(config)
    procedural = config.catalog.image_source.key == "procedural"
    if procedural:
        from vismem.env.storefront.images.glyphs import depicted_object
    return {v.url_hash: [v.cue_color, depicted_object(v.cue_object) if procedural else v.cue_object]
            for v in cat.variants}
