"""``vismem submit|status|logs``: send a run to a Ray cluster as a Ray job and follow it."""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vismem.pipelines.commands.run import add_config_args, config_from_args, fetch_inputs
from vismem.core.errors import VismemError

#: Never shipped in a job's working_dir: venvs, runs, caches and generated data.
RUNTIME_EXCLUDES = [".venv/", "runs/", ".runs/", ".git/", "**/__pycache__/", ".pytest_cache/", "*.egg-info/",
                    "bench/results/", "out/", "*.parquet", "*.png", "*.webp"]

_TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}


def client_auth_mode(environ: Any = None) -> str:
    """The ``RAY_AUTH_MODE`` a client talks to a cluster with: the one set; else ``token`` where a
    token is at hand (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``, as Ray
    itself looks); else ``disabled``."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_MODE"):
        return environ["RAY_AUTH_MODE"]
    path = environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    return "token" if environ.get("RAY_AUTH_TOKEN") or Path(path).is_file() else "disabled"


def _client(address: str) -> Any:
    os.environ["RAY_AUTH_MODE"] = client_auth_mode()
    from ray.job_submission import JobSubmissionClient

    try:
        return JobSubmissionClient(address)
    except Exception as err:  # connection refused, bad address
        raise VismemError(f"cannot reach the Ray job server at {address!r}: {err}") from None


def _dashboard(args: argparse.Namespace) -> str:
    addr = args.dashboard or os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get("RAY_DASHBOARD_ADDRESS")
    if not addr:
        raise VismemError("no job server address: pass --dashboard http://HOST:8265 or set RAY_API_SERVER_ADDRESS")
    return addr if "://" in addr else f"http://{addr}"


def submit(cfg: Any, dashboard: str, *, working_dir: str | Path, env: dict[str, str] | None = None,
           pip: list[str] | None = None, wait: bool = False, timeout_s: float = 3600) -> str:
    """Submit ``cfg`` as a Ray job; returns the submission id.

    The job carries its code and the small data files its stages read (:mod:`vismem.pipelines.jobpackage`:
    ``data_dir`` becomes the package's ``_data/``; an ``s3://`` data dir is read from the store),
    the client's git revision (``$VISMEM_GIT_REVISION``; the package has no ``.git/``) and the
    client's resolved config as YAML (``$VISMEM_CONFIG_YAML``). The job's driver runs
    ``vismem run`` with ``--address auto`` so it attaches to the cluster that runs it, under the
    cluster's own Ray auth mode (nothing here overrides it).
    """
    import tempfile

    from vismem.pipelines import jobpackage
    from vismem.pipelines.manifest import GIT_REVISION_VAR, git_revision

    client = _client(dashboard)
    with tempfile.TemporaryDirectory(prefix="vismem-job-") as pkg:
        config_yaml, _shipped = jobpackage.build(cfg, Path(working_dir).resolve(), Path(pkg))
        runtime_env: dict[str, Any] = {"working_dir": pkg, "excludes": RUNTIME_EXCLUDES,
                                       "env_vars": {**(env or {}),
                                                    GIT_REVISION_VAR: git_revision(working_dir),
                                                    "VISMEM_CONFIG_YAML": config_yaml}}
        # The package is uploaded by submit_job; the folder of links is not needed afterwards.
        job_id = _send(client, cfg, dashboard, runtime_env, pip)
    if wait:
        status = wait_for(client, job_id, timeout_s)
        if status != "SUCCEEDED":
            from vismem.core.secrets import Scrubber

            # The log tail may echo a forwarded credential: cut every forwarded value out of it.
            tail = Scrubber(v for k, v in (env or {}).items() if _is_secret_var(k)).text(
                client.get_job_logs(job_id)[-2000:])
            raise VismemError(f"job {job_id} ended {status}:\n{tail}")
    return job_id


def _send(client: Any, cfg: Any, dashboard: str, runtime_env: dict[str, Any], pip: list[str] | None) -> str:
    if pip:
        runtime_env["pip"] = pip
    # `python` is the cluster's interpreter (the image's, or the venv the raylets run from).
    entry = "python -m vismem run --config env:VISMEM_CONFIG_YAML --address auto --no-progress"
    submission_id = f"vismem-{cfg.run_id}-{int(time.time())}"
    deadline = time.monotonic() + 90
    while True:
        try:
            job_id = client.submit_job(entrypoint=entry, runtime_env=runtime_env, submission_id=submission_id,
                                       metadata={"run_id": cfg.run_id})
            break
        except RuntimeError as err:
            # A freshly started head needs a few seconds before its job agent registers.
            if "No available agent" in str(err) and time.monotonic() < deadline:
                time.sleep(2)
                continue
            raise VismemError(f"job submission to {dashboard} failed: {err}") from None
    return job_id


def wait_for(client: Any, job_id: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = str(client.get_job_status(job_id)).split(".")[-1]
        if status in _TERMINAL:
            return status
        time.sleep(1.0)
    return "TIMEOUT"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="submit a run to a Ray cluster as a Ray job",
                       description="Submit a run config to a Ray cluster (JobSubmissionClient). The job carries "
                       "the code (minus .git, venvs, runs and generated data), the data files its stages read "
                       "(as _data/; an s3:// data_dir is read from the store instead), the git revision and the "
                       "resolved config; AWS_REGION/AWS_ENDPOINT_URL, VISMEM_SERVE_URL, *_BASE_URL, *_API_KEY and "
                       "the bounds' overrides (VISMEM_MAX_*, VISMEM_DATA_DIR_MAX_*) are forwarded. AWS keys stay "
                       "on this machine unless --forward-credentials: the cluster's own role (instance profile, "
                       "IRSA) reaches the store.")
    p.add_argument("stages", nargs="*", metavar="STAGE", help="stages to run")
    add_config_args(p)
    p.add_argument("--dashboard", metavar="URL", help="Ray job server (default $RAY_API_SERVER_ADDRESS)")
    p.add_argument("--env", action="append", default=[], metavar="NAME",
                   help="forward this environment variable to the job")
    p.add_argument("--forward-credentials", action="store_true",
                   help="also forward this machine's AWS keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                   "AWS_SESSION_TOKEN), overriding the cluster's own role for the job")
    p.add_argument("--wait", action="store_true", help="wait for the job to finish; non-zero exit if it fails")
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait with --wait")
    p.set_defaults(func=_submit)

    s = sub.add_parser("status", help="status of a submitted job", description="Print a Ray job's status.")
    s.add_argument("job_id", nargs="?", help="submission id (default: list all jobs)")
    s.add_argument("--dashboard", metavar="URL", help="Ray job server (default $RAY_API_SERVER_ADDRESS)")
    s.set_defaults(func=_status)

    lg = sub.add_parser("logs", help="logs of a submitted job", description="Print (or follow) a Ray job's logs.")
    lg.add_argument("job_id", help="submission id")
    lg.add_argument("--dashboard", metavar="URL", help="Ray job server (default $RAY_API_SERVER_ADDRESS)")
    lg.add_argument("--follow", "-f", action="store_true", help="stream until the job ends")
    lg.set_defaults(func=_logs)


#: Forwarded to every job: the store's endpoint, the Serve address (``deployed:NAME`` models),
#: offline mode for model hubs, and the overrides of ``vismem.core.bounds`` that are set.
_FORWARD = ("AWS_REGION", "AWS_ENDPOINT_URL", "VISMEM_S3_ENDPOINT", "VISMEM_SERVE_URL", "HF_HUB_OFFLINE")
#: Forwarded only when asked: they would replace the cluster's own role for the job.
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
#: Also forwarded: what the model specs read (``base_url: ${VISMEM_VLM_BASE_URL:-...}``,
#: ``api_key_env: GEMINI_API_KEY``, ...), whatever the model's name.
_MODEL_VARS = re.compile(r"^[A-Z][A-Z0-9_]*_(BASE_URL|API_KEY)$")


def forwarded_env(extra: list[str] = (), *, credentials: bool = False) -> dict[str, str]:  # type: ignore[assignment]
    """The client's variables a job gets (values never printed: see :func:`_is_secret_var`); the
    AWS keys only with ``credentials``."""
    from vismem.core.bounds import ALL as BOUNDS

    names = [*_FORWARD, *(b.var for b in BOUNDS), *(CREDENTIALS if credentials else ()),
             *(k for k in sorted(os.environ) if _MODEL_VARS.match(k)), *extra]
    return {k: os.environ[k] for k in names if k in os.environ}


def _is_secret_var(name: str) -> bool:
    from vismem.core.secrets import is_secret_name

    return is_secret_name(name) or name.endswith("_API_KEY")


def _submit(args: argparse.Namespace) -> int:
    from vismem.core.paths import repo_root

    cfg = config_from_args(args)
    fetch_inputs(cfg)  # the job package ships the data dir's small datasets (pipelines.jobpackage)
    dashboard = _dashboard(args)
    if cfg.store.uri.startswith("local-s3://"):
        raise VismemError("a submitted run needs a store the cluster can reach: pass --store s3://... or file:///...")
    if cfg.store.uri.startswith("file://") and not cluster_is_here(dashboard):
        raise VismemError(f"store {cfg.store.uri} is a folder on this machine, which the cluster at {dashboard} "
                          "cannot reach: pass --store s3://BUCKET/PREFIX")
    env = forwarded_env(args.env, credentials=args.forward_credentials)
    job_id = submit(cfg, dashboard, working_dir=repo_root(), env=env, wait=args.wait, timeout_s=args.timeout)
    print(job_id)
    return 0


def _is_local(host: str) -> bool:
    """Whether ``host`` (a name or an IP) is this machine: loopback, its hostname, or an address
    one of its interfaces holds (binding a socket to it succeeds; nothing listens)."""
    import ipaddress
    import socket

    if host in ("localhost", socket.gethostname().lower()):
        return True
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False  # another host's name: never looked up
    if ip.is_loopback:
        return True
    with socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind((str(ip), 0))
            return True
        except OSError:
            return False


def cluster_node_ips(dashboard: str) -> list[str]:
    """The IPs of the cluster's alive nodes, as its dashboard reports them (Ray's state API)."""
    os.environ["RAY_AUTH_MODE"] = client_auth_mode()
    from ray.util.state import list_nodes

    return [n.node_ip for n in list_nodes(address=dashboard, timeout=10, raise_on_missing_output=False)
            if str(n.state) == "ALIVE"]


def cluster_is_here(dashboard: str) -> bool:
    """Whether the cluster behind a job server runs on this machine (a ``file://`` store is then
    shared with it). A dashboard named by another host is elsewhere; one reached on this machine --
    loopback, perhaps an SSH tunnel to a remote head -- is asked for its nodes' addresses, and is
    here only when every one of them is this machine's."""
    host = (urlsplit(dashboard).hostname or "").lower()
    if not _is_local(host):
        return False
    try:
        ips = cluster_node_ips(dashboard)
    except Exception as err:  # noqa: BLE001 - refused, not a dashboard, an old Ray
        raise VismemError(f"cannot reach the Ray job server at {dashboard!r} to ask where its nodes run: "
                          f"{' '.join(str(err).split())[:200]}") from None
    return bool(ips) and all(_is_local(ip.lower()) for ip in ips)


def _ask(dashboard: str, job_id: str | None, call: Any, *a: Any) -> Any:
    """``call(*a)`` on the job server; its errors (an unknown job id, a server error) become one
    line instead of the SDK's traceback."""
    try:
        return call(*a)
    except (RuntimeError, ConnectionError, OSError) as err:
        text = " ".join(str(err).split())
        if job_id and ("404" in text or "does not exist" in text):
            raise VismemError(f"no job {job_id!r} at {dashboard} (`vismem status --dashboard {dashboard}` "
                              "lists the jobs)") from None
        raise VismemError(f"the job server at {dashboard} failed: {text[:300]}") from None


def _status(args: argparse.Namespace) -> int:
    dashboard = _dashboard(args)
    client = _client(dashboard)
    if args.job_id:
        status = _ask(dashboard, args.job_id, client.get_job_status, args.job_id)
        print(str(status).split(".")[-1])
        return 0
    for job in _ask(dashboard, None, client.list_jobs):
        print(f"{job.submission_id}\t{str(job.status).split('.')[-1]}\t{(job.metadata or {}).get('run_id', '')}")
    return 0


def _logs(args: argparse.Namespace) -> int:
    dashboard = _dashboard(args)
    client = _client(dashboard)
    if not args.follow:
        print(_ask(dashboard, args.job_id, client.get_job_logs, args.job_id), end="")
        return 0
    _ask(dashboard, args.job_id, client.get_job_info, args.job_id)  # an unknown id: one line, not a stream error
    import asyncio

    async def tail() -> None:
        async for chunk in client.tail_job_logs(args.job_id):
            print(chunk, end="", flush=True)

    _ask(dashboard, args.job_id, asyncio.run, tail())
    return 0
