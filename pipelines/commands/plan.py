"""``vismem plan``: VLM calls, tokens, GPU-hours and wall time of a config (see :mod:`vismem.pipelines.plan`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from vismem.core.errors import ConfigError

if TYPE_CHECKING:
    from vismem.core.store import Store


def add_parser(sub: argparse._SubParsersAction) -> None:
    from vismem.pipelines.commands.run import add_config_args
    from vismem.pipelines.stage import all_stages

    p = sub.add_parser("plan", help="estimate VLM calls, tokens, GPU-hours, API cost and wall time of a run",
                       description="Estimate what a config costs before running it: VLM calls and tokens per "
                       "stage and endpoint (GPU-served models apart from hosted APIs: requests per minute, cost "
                       "when the model YAML has a price), calls in flight (the stage's in_flight, the client's "
                       "max_concurrency, the fleet's KV capacity), a GPU call's cost from its tokens (prefill, "
                       "vision, decode on the device's peaks x utilisation, or --calibration) and each row's bound "
                       "(compute, bandwidth, kv, client, rate-limit), GPU-hours held, wall time on N GPUs, and how "
                       "probes grow with J (exhaustive O(J^2) per chain, Monte Carlo O(J*M)). Per-call figures "
                       "are given (--rate) or measured from a finished run (--measured RUN_ID, read from --store).")
    p.add_argument("stages", nargs="*", metavar="STAGE", help="stages to plan (default: the config's)")
    add_config_args(p)
    p.add_argument("--gpus", type=int, default=1, help="GPUs serving each stage's GPU-served models (default 1)")
    p.add_argument("--rate", action="append", default=[], metavar="NAME=VALUE",
                   help="override a per-call figure, e.g. --rate latency_s=1.5 (see the printed assumptions)")
    p.add_argument("--measured", metavar="RUN_ID",
                   help="take latency_s and steps_per_session from this finished run's trajectories in --store")
    p.add_argument("--device", metavar="NAME", help="the GPU every GPU-served model runs on (H100, H200, A100, L40S, "
                   "cpu; default: each deployment's accelerator_type); its peaks are serve/devices.yaml's")
    p.add_argument("--calibration", metavar="FILE", help="measured engine throughput per model (prefill tokens/s, "
                   "decode tokens/s at a batch): the JSON `vismem bench serve-throughput --out FILE` writes, or a "
                   "{calibrations: [...]} YAML; replaces the utilisation defaults for those models")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    for stage in all_stages():  # the same stage flags as `vismem run` (--chains, --J, ...)
        stage.add_cli_args(p)
    p.set_defaults(func=_plan)


def rates_from(pairs: list[str], measured: dict[str, float] | None = None) -> Any:
    """:class:`vismem.pipelines.plan.Rates` with measured figures, then ``NAME=VALUE`` overrides, applied."""
    from vismem.pipelines.plan import Rates

    known = {f.name for f in dataclasses.fields(Rates)}
    values: dict[str, float] = dict(measured or {})
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or name not in known:
            raise ConfigError(f"bad --rate {pair!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(known))}")
        try:
            values[name] = float(raw)
        except ValueError:
            raise ConfigError(f"bad --rate {pair!r}: {raw!r} is not a number") from None
        if values[name] < 0 or (name in ("latency_s", "streams_per_gpu", "endpoint_slots") and values[name] == 0):
            raise ConfigError(f"bad --rate {pair!r}: must be positive")
    return Rates(**values)


def measure(store: "Store", run_id: str) -> dict[str, float]:
    """Mean seconds per agent call and agent steps per session of a finished run's encoding."""
    import polars as pl

    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    key = f"runs/{run_id}/results/encoding.parquet"
    if not store.exists(key):
        raise ConfigError(f"no encoding results for run {run_id!r} in {store.uri} (`vismem runs` lists the runs)")
    enc = store.read_table(key)
    enc = enc if isinstance(enc, pl.DataFrame) else pl.from_arrow(enc)
    lat, steps = [], []
    for slug, seed, j in enc.select("backend", "seed", "j").unique().iter_rows():
        try:
            df = TrajectoryCache(store, slug).read_steps(seed, j - 1)
        except FileNotFoundError:
            continue
        steps.append(df.height)
        lat.extend(v for v in df["latency_s"].to_list() if v is not None)
    if not steps or not lat:
        raise ConfigError(f"run {run_id!r} has no timed encoding steps to measure")
    return {"latency_s": sum(lat) / len(lat), "steps_per_session": sum(steps) / len(steps)}


#: Manifest component roles (by prefix) whose ``{name, args}`` spec resolves in a registry kind.
_ROLE_KINDS = (("encode.backend", "vlm"), ("probes.recaller", "vlm"), ("memshot.vlm", "vlm"), ("memshot.judge", "vlm"),
               ("memshot.memories", "dialogue-memory"), ("image_source", "image_source"), ("memshot.", "embedder"))


def _declared_stand_in(role: str, spec: Any) -> bool:
    """Whether the registry of ``role`` declares ``spec`` a stand-in. A spec's own record need not
    say so: a tiny random model (``transformers`` with ``path: tiny:...``) or the scripted recaller
    is recorded as its bare ``{name, args}``."""
    from vismem.pipelines.registries import registries

    kind = next((k for prefix, k in _ROLE_KINDS if role.startswith(prefix)), None)
    if kind is None or not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        return False
    try:
        return registries()[kind].is_stand_in(spec)
    except Exception:  # a name this checkout no longer registers: the recorded marks still count
        return False


def stand_ins(components: dict[str, Any]) -> list[str]:
    """Roles of a manifest's ``components`` that built a stand-in: a spec marked ``stand_in: true``
    at any depth, named with ``stand-in`` (a back-end's cache slug, a label), or one its registry
    declares a stand-in (:func:`_declared_stand_in`)."""
    def marked(v: Any) -> bool:
        if isinstance(v, dict):
            return v.get("stand_in") is True or any(marked(x) for x in v.values())
        if isinstance(v, list):
            return any(marked(x) for x in v)
        return isinstance(v, str) and "stand-in" in v

    return [role for role, spec in components.items() if marked(spec) or _declared_stand_in(role, spec)]


def stand_in_warning(store: "Store", run_id: str) -> str | None:
    """One line when the measured run used stand-ins (its figures are not a real model's), else None."""
    from vismem.pipelines.manifest import read_manifest

    manifest, problem = read_manifest(store, run_id)
    if problem:
        return f"run {run_id}'s manifest cannot be read ({problem}): whether it used stand-ins is unknown"
    components = manifest.get("components")
    roles = stand_ins(components if isinstance(components, dict) else {})
    if not roles:
        return None
    shown = ", ".join(roles[:4]) + (f" and {len(roles) - 4} more" if len(roles) > 4 else "")
    return (f"run {run_id} used stand-ins ({shown}): its measured latency and steps describe them, "
            "not the models a real run would call")


def _plan(args: argparse.Namespace) -> int:
    from vismem.pipelines.commands.run import config_from_args
    from vismem.pipelines.plan import estimate
    from vismem.pipelines.planrender import render

    if args.gpus < 1:
        raise ConfigError(f"--gpus must be >= 1, got {args.gpus}")
    cfg = config_from_args(args)
    measured = None
    if args.measured:
        from vismem.pipelines.runner import open_store

        with open_store(cfg, create=False) as (store, _env):
            measured = measure(store, args.measured)
            warning = stand_in_warning(store, args.measured)
        if warning:
            import sys

            print(f"vismem: warning: {warning}", file=sys.stderr)
    from vismem.pipelines.plangpu import Sizing
    from vismem.serve.throughput import device_named, load_calibration

    if args.device:
        device_named(args.device)  # an unknown name is one line before anything is planned
    sizing = Sizing(args.device, load_calibration(args.calibration) if args.calibration else {})
    plan = estimate(cfg, rates_from(args.rate, measured), gpus=args.gpus, sizing=sizing)
    print(json.dumps(plan, indent=2) if args.json else render(plan))
    return 0
