"""``vismem serve up|status|down|config``: model deployments on Ray Serve, from the model YAMLs.

``up`` writes one Serve config file (:func:`vismem.serve.deploy.serve_config`: what ``serve deploy`` /
``serve run`` and a RayService's ``serveConfigV2`` take) and deploys it through the cluster
dashboard's Serve REST API, exactly as ``serve deploy`` does. Without ``--dashboard`` it first
starts a Ray head on loopback (:class:`vismem.pipelines.localcluster.LocalRayCluster`: own temp dir,
free ports) that outlives the command, so later runs reach the models. What is deployed is
recorded in the state file (:func:`vismem.serve.deployed.state_path`); runs name a model there as
``deployed:<name>``. ``down`` removes models (all of them: vismem's apps, and the local Ray it
started); ``status`` prints each app's state and exits 1 when nothing is deployed.

A cluster's Serve instance is shared: ``up`` and ``down`` read its applications, lay vismem's own
over (or take them out of) the foreign ones and write the merged config back
(:mod:`vismem.serve.sharing`), so a RayService's or a colleague's apps survive both; each write is
read back and, when a concurrent writer changed the apps meanwhile, merged and written again.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from vismem.core.errors import ConfigError, VismemError
from vismem.core.lifeline import descendants
from vismem.core.ports import free_ports

_OVERRIDES = (("min_replicas", int), ("max_replicas", int), ("target_ongoing_requests", float),
              ("num_cpus", float), ("num_gpus", float), ("accelerator_type", str))


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="model variants (serve/models/*.yaml) or registered VLM/embedder names")
    p.add_argument("--preset", choices=("local", "paper"),
                   help="deploy a preset's models: local = the stand-ins registered here (default with no "
                        "MODEL), paper = the paper's served models (GPU cluster)")
    p.add_argument("--weights", metavar="ROOT",
                   help="where `vismem weights sync --to` put the weights the vLLM models load: s3://BUCKET/PREFIX, "
                        "a models dir on the cluster (default ${VISMEM_MODELS_DIR:-/models}, expanded on the "
                        "cluster), or 'hub' (download at replica start)")
    g = p.add_argument_group("deploy settings (override every named model's deploy: block)")
    for field, typ in _OVERRIDES:
        g.add_argument(f"--{field.replace('_', '-')}", dest=field, type=typ, metavar=typ.__name__.upper(),
                       help="'none' clears it" if field == "accelerator_type" else None)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="deploy models on Ray Serve (up, status, down, config)",
                       description="Model deployments on Ray Serve from serve/models/*.yaml, through Serve "
                       "config files. Runs reach a deployed model as deployed:NAME.")
    ssub = p.add_subparsers(dest="serve_command", metavar="ACTION")
    ssub.required = True
    up = ssub.add_parser("up", help="deploy models (starts a local Ray on loopback without --dashboard)",
                         description="Deploy models on Ray Serve and record them for runs (deployed:NAME).")
    _add_model_args(up)
    up.add_argument("--dashboard", metavar="URL", help="a cluster's Ray dashboard (default: start a local Ray)")
    up.add_argument("--serve-url", metavar="URL", help="how runs reach the Serve proxy (default: the proxy's address)")
    up.add_argument("--host", help="proxy host (local default 127.0.0.1, cluster 0.0.0.0)")
    up.add_argument("--port", type=int, help="proxy port (local default: a free port, cluster 8000)")
    up.add_argument("--ray-cpus", type=int, help="CPUs of the local Ray (default: this machine's)")
    up.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every app to run")
    up.add_argument("--code", metavar="WHERE",
                    help="how vismem's apps get this checkout's code on a cluster: dashboard (default: uploaded "
                         "into the cluster; not for apps that scale to zero), s3://BUCKET/PREFIX (a zip there), "
                         "or image (the code installed in the image)")
    up.set_defaults(func=_up)

    st = ssub.add_parser("status", help="what is deployed; exit 1 when nothing is",
                         description="Print every deployed app, its status, replicas and OpenAI base URL.")
    st.add_argument("--dashboard", metavar="URL", help="a cluster's Ray dashboard (default: the state file's)")
    st.set_defaults(func=_status)

    dn = ssub.add_parser("down", help="remove models (all: shut Serve down, stop the local Ray)",
                         description="Remove the named models, or everything (and the local Ray `up` started).")
    dn.add_argument("models", nargs="*", metavar="MODEL", help="models to remove (default: all)")
    dn.add_argument("--dashboard", metavar="URL", help="a cluster's Ray dashboard (default: the state file's)")
    dn.set_defaults(func=_down)

    cf = ssub.add_parser("config", help="print the Serve config file for models (serve deploy / RayService)",
                         description="Print (or write) the Serve config that deploys the models.")
    _add_model_args(cf)
    cf.add_argument("--host", default="0.0.0.0")
    cf.add_argument("--port", type=int, default=8000)
    cf.add_argument("--proxy-location", default="EveryNode", choices=("EveryNode", "HeadOnly", "Disabled"))
    cf.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    cf.set_defaults(func=_config)


def _models(args: argparse.Namespace) -> list[str]:
    """The named models, or the preset's (local: only the stand-ins registered here)."""
    from vismem.serve.deploy import PRESETS

    if args.models and args.preset:
        raise ConfigError("give model names or --preset, not both")
    if args.models:
        return list(args.models)
    names = PRESETS[args.preset or "local"]
    if args.preset == "paper":
        return list(names)
    from vismem.serve.registry import EMBEDDERS, VLMS

    return [n for n in names if n in VLMS or n in EMBEDDERS]


def _overrides(args: argparse.Namespace, models: list[str]) -> dict[str, dict[str, Any]]:
    over = {f: getattr(args, f) for f, _ in _OVERRIDES if getattr(args, f, None) is not None}
    if str(over.get("accelerator_type", "")).lower() == "none":
        over["accelerator_type"] = None
    return {m: dict(over) for m in models} if over else {}


def _weights(args: argparse.Namespace, state: dict[str, Any] | None = None) -> str:
    from vismem.serve.weights import DEFAULT_ROOT

    return getattr(args, "weights", None) or (state or {}).get("weights") or DEFAULT_ROOT


def _config(args: argparse.Namespace) -> int:
    import yaml

    from vismem.serve.deploy import serve_config

    models = _models(args)
    cfg = serve_config(models, host=args.host, port=args.port, proxy_location=args.proxy_location,
                       overrides=_overrides(args, models), weights=_weights(args))
    text = yaml.safe_dump(cfg, sort_keys=False)
    if args.output:
        Path(args.output).write_text(text)
    else:
        print(text, end="")
    return 0


# -- the dashboard's Serve REST API (what `serve deploy` / `serve status` / `serve shutdown` use) --

def _client(dashboard: str) -> Any:
    from vismem.pipelines.commands.jobs import client_auth_mode

    os.environ["RAY_AUTH_MODE"] = client_auth_mode()  # a token at hand: token auth, as for submit
    from ray.dashboard.modules.serve.sdk import ServeSubmissionClient

    try:
        return ServeSubmissionClient(dashboard)
    except Exception as err:  # refused, not a dashboard, too old
        raise VismemError(f"cannot reach the Ray dashboard at {dashboard!r}: {err}") from None


def _apps(client: Any) -> dict[str, Any]:
    return client.get_serve_details().get("applications") or {}


def _wait_running(client: Any, apps: list[str], timeout_s: float) -> dict[str, Any]:
    """Poll until every app is RUNNING; a failed app or the timeout is an error naming it."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = _apps(client)
        failed = {a: got[a].get("message", "") for a in apps if got.get(a, {}).get("status") == "DEPLOY_FAILED"}
        if failed:
            raise VismemError("deploy failed: " + "; ".join(f"{a}: {m[-1500:]}" for a, m in failed.items()))
        if all(got.get(a, {}).get("status") == "RUNNING" for a in apps):
            return got
        if time.monotonic() > deadline:
            states = {a: got.get(a, {}).get("status", "absent") for a in apps}
            raise VismemError(f"apps not running after {timeout_s:.0f}s: {states}")
        time.sleep(1.0)


def _local_cluster(state: dict[str, Any]) -> Any:
    from vismem.pipelines.localcluster import LocalRayCluster

    lr = state.get("local_ray") or {}
    return LocalRayCluster(root=Path(lr["root"]), token=lr["token"], gcs_port=lr["gcs_port"],
                           dashboard_port=lr["dashboard_port"], workers=0, lifeline=False) if lr else None


def alive(state: dict[str, Any] | None) -> bool:
    if not state:
        return False
    try:
        _client(state["dashboard"])
        return True
    except VismemError:
        return False


def _up(args: argparse.Namespace) -> int:
    from vismem.serve.deploy import serve_config
    from vismem.serve.deployed import read_state, write_state

    models = _models(args)
    new_over = _overrides(args, models)
    state = read_state()
    if state and not alive(state) and not args.dashboard:
        _teardown(state)  # a crashed local Ray: clean up its leftovers, start afresh
        state = None
    if state and args.dashboard and args.dashboard.rstrip("/") != state["dashboard"]:
        raise ConfigError(f"models are already deployed on {state['dashboard']} (`vismem serve down` first)")
    local = state is None and not args.dashboard
    if state is None:
        host = args.host or ("127.0.0.1" if local else "0.0.0.0")
        port = args.port or (free_ports(1)[0] if local else 8000)
        state = {"dashboard": (args.dashboard or "").rstrip("/"), "models": [], "overrides": {},
                 "http": {"host": host, "port": port}, "local_ray": None}
    all_models = list(dict.fromkeys([*state["models"], *models]))
    overrides = {**state.get("overrides", {}), **new_over}
    http = state["http"]
    # The whole config is checked before anything starts: unknown models exit 2 here.
    weights = _weights(args, state)
    cfg = serve_config(all_models, host=http["host"], port=http["port"],
                       proxy_location="HeadOnly" if local or state.get("local_ray") else "EveryNode",
                       overrides=overrides, weights=weights)
    cluster = None
    if local:
        from vismem.pipelines.localcluster import LocalRayCluster

        # It outlives this command (runs reach it until `serve down`): no lifeline; the state
        # keeps the cluster's root and process token so `down` finds every process it started.
        cluster = LocalRayCluster(head_cpus=args.ray_cpus or os.cpu_count() or 2, workers=0, lifeline=False).start()
        state["dashboard"] = cluster.dashboard_url
        state["local_ray"] = {"root": str(cluster.root), "token": cluster.token, "gcs_port": cluster.gcs_port,
                              "dashboard_port": cluster.dashboard_port, "address": cluster.address}
    try:
        client = _client(state["dashboard"])
        from vismem.pipelines.servecode import app_runtime_env

        runtime_env = app_runtime_env(client, cfg, args.code, local=bool(state.get("local_ray")))
        cfg = serve_config(all_models, host=http["host"], port=http["port"], proxy_location=cfg["proxy_location"],
                           overrides=overrides, weights=weights, runtime_env=runtime_env)
        port = _write_ours(client, cfg, http["port"])
        _wait_running(client, [a["name"] for a in cfg["applications"]], args.timeout)
    except BaseException:
        if cluster is not None:  # nothing of a failed first deploy is left running
            cluster.stop()
        raise
    host = http["host"] if http["host"] not in ("0.0.0.0", "::") else _dashboard_host(state["dashboard"])
    state.update(models=all_models, overrides=overrides, config=cfg, weights=weights, runtime_env=runtime_env,
                 serve_url=(args.serve_url or state.get("serve_url") or f"http://{host}:{port}").rstrip("/"))
    path = write_state(state)
    _print_apps(state, _apps(client))
    where = f"; local Ray at {state['local_ray']['address']}" if state.get("local_ray") else ""
    print(f"runs reach these as deployed:NAME (state: {path}{where})")
    return 0


def _write_ours(client: Any, ours: dict[str, Any], port: int) -> int:
    """Lay ``ours`` (vismem's apps only) over the cluster's foreign applications, write the merged
    config and check it took (:func:`vismem.serve.sharing.write_shared`); returns the port Serve's
    proxies listen on."""
    import sys

    from vismem.serve.sharing import serve_port, write_shared

    done = write_shared(client, ours)
    for name in done.dropped:
        print(f"vismem: warning: Serve app {name!r} was deployed by another writer while vismem wrote its "
              "config and that write removed it (its config is gone: its owner must deploy it again)",
              file=sys.stderr)
    return serve_port(done.details, port)


def _remove_ours(client: Any) -> None:
    """Delete vismem's applications and nothing else (Serve is shut down only when nothing else runs,
    read twice: an app deployed meanwhile keeps Serve up)."""
    from vismem.serve.sharing import nothing_else

    if nothing_else(client.get_serve_details()) and nothing_else(client.get_serve_details()):
        client.delete_applications()
    else:
        _write_ours(client, {"applications": []}, 0)


def _dashboard_host(dashboard: str) -> str:
    from urllib.parse import urlparse

    return urlparse(dashboard).hostname or "127.0.0.1"


def _print_apps(state: dict[str, Any], apps: dict[str, Any]) -> None:
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    names = registered()
    for name in state["models"]:
        d = deployable(name, names, overrides=state.get("overrides", {}).get(name))
        app = apps.get(d.app, {})
        deps = app.get("deployments") or {}
        running = sum(1 for dep in deps.values() for r in dep.get("replicas") or [] if r.get("state") == "RUNNING")
        print(f"{name}\t{app.get('status', 'ABSENT')}\treplicas={running}\t{d.kind}\t{d.base_url(state['serve_url'])}"
              f"\tmodel={d.model_id}")


def _status(args: argparse.Namespace) -> int:
    from vismem.serve.deployed import read_state

    state = read_state()
    dashboard = (args.dashboard or (state or {}).get("dashboard") or "").rstrip("/")
    if not dashboard:
        print("nothing deployed (no state file; `vismem serve up` deploys models)")
        return 1
    try:
        apps = _apps(_client(dashboard))
    except VismemError as err:
        print(f"nothing reachable: {err}")
        return 1
    if not apps:
        print(f"nothing deployed on {dashboard}")
        return 1
    if state and state.get("dashboard") == dashboard:
        _print_apps(state, apps)
    else:
        for name, app in apps.items():
            print(f"{name}\t{app.get('status')}\t{app.get('route_prefix')}")
    return 0


def _teardown(state: dict[str, Any]) -> None:
    """Remove vismem's apps (foreign ones stay) or stop the local Ray that `up` started; forget the state."""
    from vismem.serve.deployed import clear_state

    cluster = _local_cluster(state)
    if state.get("dashboard") and cluster is None:  # a local Ray started by `up` goes as a whole
        try:
            client = _client(state["dashboard"])
        except VismemError:  # an unreachable cluster has nothing left to delete
            client = None
        if client is not None:
            _remove_ours(client)
    if cluster is not None:
        # Every process of the cluster carries its token (Serve replicas and the proxy too); the
        # process tree below them is taken down as well, for anything that dropped its env.
        from vismem.pipelines.localcluster import ray_port_holders

        ports = [state["local_ray"]["gcs_port"], state["local_ray"]["dashboard_port"],
                 *([state["http"]["port"]] if state.get("http") else [])]
        tree = sorted({*descendants(cluster.pids()), *ray_port_holders(ports)} - {os.getpid()})
        cluster.stop()
        _kill(tree)
        _kill([p for p in ray_port_holders(ports) if p != os.getpid()])  # nothing left on its ports
    clear_state()


def _running(pid: int) -> bool:
    from vismem.core.lifeline import alive

    return alive(pid)


def _kill(pids: list[int], wait_s: float = 10.0) -> None:
    """SIGKILL what is left of ``pids`` and wait until they are gone."""
    import signal

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait_s
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def _down(args: argparse.Namespace) -> int:
    from vismem.serve.deploy import serve_config
    from vismem.serve.deployed import read_state, write_state

    state = read_state()
    if state is None:
        if not args.dashboard:
            print("nothing deployed")
            return 0
        state = {"dashboard": args.dashboard.rstrip("/"), "models": []}
    gone = [m for m in args.models if m not in state["models"]]
    if gone:
        raise ConfigError(f"not deployed: {', '.join(gone)} (deployed: {', '.join(state['models']) or 'none'})")
    keep = [m for m in state["models"] if m not in args.models] if args.models else []
    if not keep:
        _teardown(state)
        print("serve down: nothing deployed" + (", local Ray stopped" if state.get("local_ray") else ""))
        return 0
    http = state["http"]
    cfg = serve_config(keep, host=http["host"], port=http["port"], proxy_location=state["config"]["proxy_location"],
                       overrides=state.get("overrides"), weights=_weights(args, state),
                       runtime_env=state.get("runtime_env"))
    _write_ours(_client(state["dashboard"]), cfg, http["port"])  # foreign apps are written back as they run
    state.update(models=keep, config=cfg)
    write_state(state)
    print(f"removed {', '.join(args.models)}; still deployed: {', '.join(keep)}")
    return 0
