"""Starting or attaching to Ray, with settings that never deadlock a 2-core machine."""

from __future__ import annotations

import os
import signal
import threading
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

from vismem.pipelines.settings import RayConfig
from vismem.core.errors import VismemError


def init_ray(cfg: RayConfig | None = None, *, env_vars: dict[str, str] | None = None) -> dict[str, Any]:
    """Start a local Ray (``cfg.address is None``) or attach to a cluster; idempotent.

    Returns the cluster resources. ``env_vars`` reach every worker (store credentials).
    """
    import ray

    cfg = cfg or RayConfig()
    if ray.is_initialized():
        return ray.cluster_resources()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # Ray 2.60 local clusters and `ray job submit`
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    # Inside a submitted job these variables already come from the job's runtime_env, and Ray
    # refuses to merge duplicate keys: pass only what the workers would otherwise lack.
    missing = {k: v for k, v in (env_vars or {}).items() if os.environ.get(k) != v}
    runtime_env = {"env_vars": missing} if missing else None
    address = cfg.address
    if cfg.mode == "cluster" and not address:
        raise VismemError("ray.mode is 'cluster' but ray.address is not set (use --address auto or host:port)")
    # Inside a submitted Ray job the driver must attach to the cluster that runs it.
    if address is None and os.environ.get("RAY_ADDRESS"):
        address = os.environ["RAY_ADDRESS"]
    # ray.init installs SIGTERM handlers (Python: exit 15; the core worker's C++ one: a stack dump)
    # over the CLI's, which unwinds the run like Ctrl-C: a Python handler set before is kept in
    # force, during the start too (see _sigterm_kept).
    sigterm = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    from vismem.core.progress import step

    try:
        with _sigterm_kept(sigterm), step("Ray: attaching" if address else "Ray: starting"):
            _start(cfg, address, runtime_env)
    except ConnectionError as err:
        raise VismemError(f"cannot reach Ray at {address!r}: {err}") from None
    _quiet_data_context()
    return ray.cluster_resources()


def _start(cfg: RayConfig, address: str | None, runtime_env: dict[str, Any] | None) -> None:
    import ray

    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, ignore_reinit_error=True)
        return
    with _loopback_only():
        ray.init(
            num_cpus=cfg.num_cpus or os.cpu_count() or 2,
            object_store_memory=cfg.object_store_mb * 1024 * 1024,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            runtime_env=runtime_env,
            log_to_driver=False,
            ignore_reinit_error=True,
            configure_logging=True,
            logging_level="warning",
        )


@contextmanager
def _sigterm_kept(handler: Any) -> Iterator[None]:
    """While Ray starts in a process whose SIGTERM handler is a Python one (the CLI's): a SIGTERM
    reaches that handler, never Ray's.

    Ray's Python handler (``sys.exit(15)``, set as ``ray.init`` begins) shows up here as
    ``SystemExit(15)`` and is handed to ``handler``; the core worker's C++ failure-signal handler
    (a stack dump, then exit 15) is not installed in this driver (read when ``ray.init`` creates
    the core worker; crash dumps of Ray's other processes are unaffected). Afterwards ``handler``
    is put back over Ray's.
    """
    if not callable(handler):
        yield
        return
    import ray._private.ray_constants as ray_constants

    saved = ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER
    ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    try:
        yield
    except SystemExit as exc:
        if exc.code != signal.SIGTERM:
            raise
        signal.signal(signal.SIGTERM, handler)
        handler(signal.SIGTERM, None)  # the CLI's raises (and ignores a second SIGTERM meanwhile)
        raise
    finally:
        ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = saved
        # Only Ray's is replaced: the CLI's own may have changed itself (to ignore a second SIGTERM).
        if str(getattr(signal.getsignal(signal.SIGTERM), "__module__", "") or "").startswith("ray"):
            signal.signal(signal.SIGTERM, handler)


@contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local Ray starts: every listener on 127.0.0.1 (vismem disables Ray's auth).

    Ray binds its GCS, raylet, agents and workers to the node IP, but turns "127.0.0.1" into the
    machine's outward address (``resolve_ip_for_localhost``) unless ``ENABLE_RAY_CLUSTER`` is off --
    read from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` once, at import, in the driver and in every
    process it spawns. Both are restored afterwards, so a later attach to a real cluster from
    this process still announces the outward address.
    """
    import ray._private.ray_constants as ray_constants

    var = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    saved_env, saved_flag = os.environ.get(var), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[var], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = saved_env


def _quiet_data_context() -> None:
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = os.environ.get("VISMEM_PROGRESS", "1") == "1"
    ctx.print_on_execution_start = False
    # Deterministic output order: every stage returns one row per input row, in input order.
    ctx.execution_options.preserve_order = True


def actor_pool(cfg: RayConfig, *, size: int | None = None, overlap: int = 1) -> dict[str, Any]:
    """``map_batches`` kwargs for an actor stage: fractional CPUs so tasks still get a CPU.

    ``overlap`` > 1: an actor runs that many batches at once, in threads. For workers that run
    a batch's episodes on their own thread pool: the next batch's episodes start while the last
    ones of the current batch finish, instead of the pool draining to one episode before each
    batch (episodes differ in length; the drained tail left most of a fleet idle).
    """
    from ray.data import ActorPoolStrategy

    n = size or cfg.concurrency
    if overlap > 1:
        strategy = ActorPoolStrategy(size=n, max_tasks_in_flight_per_actor=overlap,
                                     max_concurrent_calls_per_actor=overlap, enable_true_multi_threading=True)
    else:
        strategy = ActorPoolStrategy(min_size=1, max_size=n)
    kwargs: dict[str, Any] = {"compute": strategy, "num_cpus": cfg.actor_cpus}
    if is_local(cfg):
        # Ray Data restarts a dead actor forever (max_restarts=-1) and retries its tasks forever;
        # its actors always get their constructor arguments as object refs, so with restarts on,
        # Ray's core worker prints "Actor ... has constructor arguments in the object store and
        # max_restarts > 0" (ray-project/ray#57733) on the terminal for every actor. On one
        # machine a dead actor is a crash or an out-of-memory kill of this machine, which a
        # restart repeats (a deterministic crash loops for ever): the stage fails instead, in one
        # line (vismem.pipelines.runner.store_failure), and a re-run resumes from what was stored.
        # On a cluster, where a node can go away, Ray Data's restarts are kept. Ray 2.60 takes it
        # only as an extra remote arg, which it says is deprecated (for 2.64; pyproject pins 2.60)
        # in a warning of its own on the terminal: that one warning is silenced, nothing else.
        kwargs["max_restarts"] = 0
        warnings.filterwarnings("ignore", message=r"`ray_remote_args` is deprecated", category=DeprecationWarning)
    return kwargs


def is_local(cfg: RayConfig) -> bool:
    """Whether this driver runs (or will run) its own Ray on this machine, not a cluster's."""
    return cfg.mode == "local" and cfg.address is None and not os.environ.get("RAY_ADDRESS")


def task_pool(cfg: RayConfig) -> dict[str, Any]:
    """``map``/``map_batches`` kwargs for a stateless task stage."""
    from ray.data import TaskPoolStrategy

    return {"compute": TaskPoolStrategy(size=cfg.concurrency), "num_cpus": cfg.actor_cpus}


def batch_size_for(n_rows: int, concurrency: int, per_task: int = 4, least: int = 10) -> int:
    """Rows per batch so ``n_rows`` make ``per_task`` batches per concurrent task (at least ``least``
    rows each): few enough batches that Ray's per-task cost (~60 ms of scheduling on 2 cores)
    stays small, enough that the last batches balance across the tasks."""
    return max(least, -(-n_rows // (per_task * max(1, concurrency))))


def collect(ds: Any, description: str, total: int | None = None) -> list[dict[str, Any]]:
    """A Ray Data job's output rows (what ``take_all`` returns), with progress: on a terminal Ray
    Data draws its own bars; off one, rows are counted as they stream in, with a line every
    ``core.progress.EVERY_S`` (done, elapsed, ETA) even while none arrives (issue 43: the memshot
    stage's render and OCR jobs ran for minutes without a line)."""
    from vismem.core import progress

    if progress.enabled() or not progress.lines_enabled():
        return ds.take_all()
    return list(progress.track(ds.iter_rows(), description, total=total))


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
