"""Running a config: open the store (starting the local S3 server if asked), start Ray, run stages.

Every stage is a :class:`vismem.pipelines.stage.Stage` (``run(ctx: RunContext) -> dict``) listed in
``vismem.pipelines.stage.STAGE_ORDER``.
Stages are idempotent: each checks the store for finished shards and does only what is missing,
so a killed run completes on re-run with identical results.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from vismem.core import progress as progress_lines
from vismem.core.errors import NoSpace, StoreUnreachable, VismemError, error_chain, user_error
from vismem.core.lifeline import Lifeline
from vismem.core.paths import local_dir
from vismem.core.s3server import LocalS3Server
from vismem.core.s3share import serving
from vismem.core.secrets import Scrubber, ScrubFilter, is_secret_name, secret_values
from vismem.core.store import Store
from vismem.pipelines.config import RunConfig
from vismem.pipelines.context import RunContext
from vismem.pipelines.lease import RunLease
from vismem.pipelines.manifest import PENDING_STATE, Manifest, flush_pending

log = logging.getLogger("vismem")


@contextlib.contextmanager
def open_store(config: RunConfig, *, create: bool = True,
               on_server: Callable[[LocalS3Server], Any] | None = None) -> Iterator[tuple[Store, dict[str, str]]]:
    """Yield ``(store, env)``; for ``local-s3://`` a private weed server lives for the block
    (``on_server`` is given it). ``create=False`` (read-only commands): a missing folder or
    bucket is not made, and a ``local-s3://`` store whose server a running vismem owns is read
    through that server (left running) instead of being refused. The final states of runs that
    this store could not take when they ended (it had died, its disk was full) are written to it
    first (:func:`flush_pending`).

    ``env`` holds the variables workers need to reach the store (credentials, endpoint).
    """
    uri = config.store.uri
    if uri.startswith("local-s3://"):
        bucket_path = uri[len("local-s3://"):].strip("/")
        bucket = bucket_path.split("/", 1)[0]
        data_dir = local_dir(config.runs_dir) / ".s3"
        if not create and not data_dir.is_dir():
            # Nothing was ever stored here: a read-only command reads an empty store, starting no
            # server and making no folder (weed would create its data dir, the runs dir with it).
            yield Store.open(f"file://{data_dir}", create=False), {}
            return
        with serving(data_dir, (bucket,), config.store.region, share=not create) as server:
            if on_server is not None and isinstance(server, LocalS3Server):
                on_server(server)
            env = server.env()
            store = Store.open(f"s3://{bucket_path}", endpoint_url=server.endpoint_url,
                               region=config.store.region, access_key=server.access_key,
                               secret_key=server.secret_key, server_dir=server.data_dir)
            flush_pending(store, config.store.uri, local_dir(config.runs_dir))
            yield store, env
        return
    store = Store.open(uri, endpoint_url=config.store.endpoint_url, region=config.store.region, create=create)
    flush_pending(store, config.store.uri, local_dir(config.runs_dir))
    env: dict[str, str] = {}
    if store.is_s3:
        env = {"AWS_ACCESS_KEY_ID": store.spec.access_key or "", "AWS_SECRET_ACCESS_KEY": store.spec.secret_key or "",
               "AWS_SESSION_TOKEN": store.spec.session_token or "", "AWS_REGION": store.spec.region}
        if store.spec.endpoint_url:
            env["AWS_ENDPOINT_URL"] = store.spec.endpoint_url
        # Empty keys would shadow the workers' own default chain (IRSA, instance profile).
        env = {k: v for k, v in env.items() if v}
    yield store, env


class _QuietFileHandler(logging.FileHandler):
    """A run log that cannot be written (a full disk) loses those records, never prints a
    "--- Logging error ---" traceback per record on the terminal."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def _setup_logging(run_dir: Path, scrubber: Scrubber) -> logging.Handler:
    run_dir.mkdir(parents=True, exist_ok=True)
    handler = _QuietFileHandler(run_dir / "run.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ScrubFilter(scrubber))  # no secret of the config or the store reaches the log
    root = logging.getLogger("vismem")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


def _keep_log(store: Store, path: Path, run_id: str, handler: logging.Handler) -> None:
    """Copy the run log (already scrubbed of secrets) to ``runs/<run_id>/run.log`` in the store."""
    try:
        # Inside the try: on a full disk the flush itself raises ENOSPC, which would replace the
        # run's own failure (the full store named) by a nameless "no space ... writing a file".
        handler.flush()
        if path.exists():
            store.put_bytes(f"runs/{run_id}/run.log", path.read_bytes(), content_type="text/plain")
    except Exception as err:  # a log that cannot be kept must not fail a run that succeeded
        log.warning("run log not copied to the store: %s", err)


#: Environment variable marking every process of the Ray this run starts (see :func:`_ray_lifeline`).
RAY_TOKEN_VAR = "VISMEM_RUN_TOKEN"


def _ray_lifeline() -> Lifeline:
    """A watchdog that ends this run's local Ray processes when the driver goes, even by SIGKILL.

    Ray's GCS and raylet notice a dead driver, but its dashboard and runtime-env agents linger for
    a minute or more, and Chromium processes of killed workers may too. Every process the Ray we
    are about to start spawns inherits a fresh token in its environment; the lifeline ends them.
    """
    import secrets

    token = secrets.token_hex(8)
    env = {k: v for k, v in os.environ.items() if k != RAY_TOKEN_VAR}
    line = Lifeline(sweep_env=(RAY_TOKEN_VAR, token), env=env, grace_s=5.0)
    os.environ[RAY_TOKEN_VAR] = token
    return line


def run(config: RunConfig, *, stages: tuple[str, ...] | None = None, progress: bool = True,
        after: Callable[[Store, dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """Run the config's stages (or ``stages``) and return ``{stage: summary}``.

    ``after(store, results)``, when given, runs once the stages are done while the run's store is
    still open (the private S3 server of ``local-s3://`` still up); what it returns is kept under
    ``results["_after"]``.
    """
    from vismem.core import bounds
    from vismem.pipelines.rayctx import init_ray
    from vismem.pipelines.stage import get_stage

    bounds.check_all()  # a bad $VISMEM_*MAX* fails here (one line, exit 2), not in a worker
    todo = stages or config.stages
    for name in todo:
        # Fail fast, before anything is started or written: unknown stages, and components
        # (models, embedders, image sources) that do not resolve.
        get_stage(name).check(config)
    run_dir = local_dir(config.runs_dir) / config.run_id
    restore_progress = progress_lines.for_run(progress)
    results: dict[str, Any] = {}
    partial: list[str] = []
    handler: logging.Handler | None = None
    started_ray = False
    lifeline: Lifeline | None = None
    scrubber = Scrubber(secret_values(config.model_dump(mode="json")))
    servers: list[LocalS3Server] = []
    where = ["at the start of the run"]  # what the run was doing, for a store that dies
    now: dict[str, Any] = {}  # the manifest and the stage in progress, for a failure between stages
    try:
        with open_store(config, on_server=servers.append) as (store, env), contextlib.ExitStack() as keep:
            scrubber.add(v for k, v in env.items() if is_secret_name(k))
            # One run of this id per store at a time, taken before anything (its log included) is written.
            keep.enter_context(RunLease(store, config.run_id))
            # Logs start only once the store is known to be usable: a bad store writes nothing.
            handler = _setup_logging(run_dir, scrubber)
            # The log goes into the store when the run ends, failed or not: a cluster job's local
            # folder is a Ray temp dir, gone with the job.
            keep.callback(_keep_log, store, run_dir / "run.log", config.run_id, handler)
            # The manifest (stages still to come) is written before Ray starts: a run that fails
            # from here on is recorded failed with its cause (:func:`_fail_run`), never left with
            # no record at all.
            manifest = Manifest(store, config.run_id, scrubber=scrubber, pending=run_dir / PENDING_STATE,
                                store_name=config.store.uri)
            now["manifest"] = manifest
            manifest.begin(config, seeds={"root": config.seed})
            if any(get_stage(name).needs_ray for name in todo):  # a report alone starts no Ray
                import ray

                started_ray = not ray.is_initialized()  # a caller's Ray (tests, notebooks) is left running
                if started_ray:
                    lifeline = _ray_lifeline()
                where[0] = "while Ray started"
                init_ray(config.ray, env_vars=env)
                _check_servers(servers, where[0])  # a store gone while Ray started is named as such
            ctx = RunContext(config=config, store=store, run_dir=run_dir, manifest=manifest, store_env=env)
            log.info("run %s: store %s, stages %s", config.run_id, store.uri, ",".join(todo))
            for i, name in enumerate(todo, 1):
                where[0] = f"during stage {name}"
                now["stage"] = name
                manifest.stage(name, "running")
                progress_lines.stage_started(name, i, len(todo))
                t0 = time.time()
                try:
                    summary = get_stage(name).run(ctx) or {}
                except BaseException as err:
                    now.pop("stage")
                    now["recorded"] = True
                    _record_failure(manifest, name, err, servers, where[0], scrubber)
                    progress_lines.stage_finished(name, "failed", time.time() - t0, i, len(todo))
                    raise
                # A stage that finished with failed shards (e.g. encode sessions whose model calls
                # kept failing) is recorded as partial, later stages still run, and the run ends
                # with an error so scripts notice; a re-run retries only what is missing.
                status = "partial" if summary.get("status") == "partial" else "done"
                manifest.stage(name, status, **{"summary": summary})
                now.pop("stage")
                log.info("stage %s %s in %.1fs", name, status, time.time() - t0)
                progress_lines.stage_finished(name, status, time.time() - t0, i, len(todo))
                results[name] = summary
                if status == "partial":
                    partial.append(name)
                    if summary.get("failure"):
                        log.error("stage %s: %s", name, summary["failure"])
            where[0] = "at the end of the run"
            results["_store"] = store.uri
            results["_run_id"] = config.run_id
            if partial:
                results["_partial"] = partial
                # One line per stage: how many units failed and why (the CLI's exit message).
                results["_failures"] = {n: results[n].get("failure") or "failed shards" for n in partial}
            if after is not None:
                results["_after"] = after(store, results)
    except Exception as err:
        fault = _fail_run(err, now, servers, where[0], scrubber)
        if fault is None or fault is err:
            raise
        raise fault from None  # one line, the cause named (the CLI prints it and exits by its kind)
    finally:
        from vismem.pipelines.rayctx import shutdown_ray

        if "manifest" in now:
            now["manifest"].release()  # the space set aside for a state the store could not take

        if started_ray:
            shutdown_ray()
        if lifeline is not None:
            lifeline.close()  # ends whatever of this run's Ray outlived the shutdown
            os.environ.pop(RAY_TOKEN_VAR, None)
        if handler is not None:
            logging.getLogger("vismem").removeHandler(handler)
            handler.close()
        restore_progress()
    return results


def store_failure(err: BaseException, servers: list[LocalS3Server], doing: str) -> VismemError | None:
    """The one-line error a failure stands for: the local S3 server's death (whatever error its
    absence caused), a full disk or an unreachable store (from this process or a Ray worker's
    traceback), any other ``VismemError`` a worker raised; None for anything else."""
    for server in servers:
        pid = server.died()
        if pid:
            return StoreUnreachable(f"the store's S3 server (weed, pid {pid}) died {doing}; "
                                    f"its log: {server.data_dir / 'weed.log'}")
    found = user_error(err)
    if isinstance(found, (NoSpace, StoreUnreachable)):
        return type(found)(f"{found} {doing}")
    if found is None:
        died = _actor_death(err)
        if died:
            return VismemError(f"a Ray worker process died {doing} ({died}); a re-run resumes from what was stored")
    return found


def _actor_death(err: BaseException) -> str:
    """Why a Ray actor died, when ``err`` (or an error behind it) is Ray's ``RayActorError``
    (a local run's actors are not restarted: :func:`vismem.pipelines.rayctx.actor_pool`); else ''."""
    from ray.exceptions import RayActorError

    for e in error_chain(err):
        if isinstance(e, RayActorError) or "ActorDiedError" in type(e).__name__:
            text = str(e)
            detail = re.search(r"(?:exit detail|The actor is dead because)[: ]*([^\n]+)", text)
            why = detail.group(1) if detail else text.splitlines()[0] if text.strip() else ""
            return " ".join(why.split())[:300] or "its actor died unexpectedly"
    return ""


def _check_servers(servers: list[LocalS3Server], doing: str) -> None:
    """Raise the one-line error of a local S3 server that has died (``doing`` says when)."""
    if any(s.died() for s in servers):
        raise store_failure(RuntimeError("the store's server died"), servers, doing) or StoreUnreachable(doing)


def _fail_run(err: Exception, now: dict[str, Any], servers: list[LocalS3Server], doing: str,
              scrubber: Scrubber) -> VismemError | None:
    """Record a failed run in its manifest (``now["manifest"]``, once it exists) and return the
    one-line error it stands for (:func:`store_failure`).

    A failure as a stage began or ended is that stage's; one outside any stage (Ray not starting,
    the store dying as Ray started, a step after the stages) is the run's own
    (:meth:`Manifest.fail`). A store that cannot take the record leaves it in the run's pending
    file, written by the next command against that store.
    """
    fault = store_failure(err, servers, doing)
    manifest = now.get("manifest")
    if manifest is None or now.get("recorded"):
        return fault
    if "stage" in now:  # it failed as a stage began or ended (the store, most often)
        _record_failure(manifest, now["stage"], err, servers, doing, scrubber)
        return fault
    if any(s.died() for s in servers):
        manifest.offline()  # no store to try: straight to the local file
    error = str(fault) if fault is not None else f"{type(err).__name__}: {err}"
    try:
        manifest.fail(scrubber.text(error))
    except Exception as save_err:  # noqa: BLE001 - the run's own failure is what it reports
        log.warning("the run's failure is kept locally until the store takes it (%s)", save_err)
    return fault


def _record_failure(manifest: Manifest, name: str, err: BaseException, servers: list[LocalS3Server],
                    doing: str, scrubber: Scrubber) -> None:
    """Record stage ``name`` as failed, with the cause the user is told; a store that cannot take
    it leaves it in the run's pending-state file (written to the store by a later command)."""
    fault = store_failure(err, servers, doing)
    if any(s.died() for s in servers):
        manifest.offline()  # no store to try: straight to the local file
    error = str(fault) if fault is not None else f"{type(err).__name__}: {err}"
    try:
        manifest.stage(name, "failed", error=scrubber.text(error))
    except Exception as save_err:  # noqa: BLE001 - the stage's own failure is what the run reports
        log.warning("stage %s: its failure is kept locally until the store takes it (%s)", name, save_err)
