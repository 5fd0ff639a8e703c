"""The ``runtime_env`` of vismem's Serve apps (:func:`app_runtime_env`), and their code as a zip
in object storage: a ``py_modules`` entry that lives as long as the bucket does.

A package uploaded through the dashboard (``gcs://_ray_pkg_...``) is reference-counted by Ray:
once no replica of an app holds it -- an app scaled to zero -- the GCS deletes it, and the next
replica fails to start. A remote URI does not expire, so apps that scale to zero ship their code
this way (``vismem serve up --code s3://BUCKET/PREFIX``).

The zip is deterministic (sorted entries, fixed timestamps) and named by its content
(``vismem-code-<sha256[:16]>.zip``), so an unchanged checkout uploads nothing. Its single
top-level folder is stripped by Ray when it unpacks a remote package, leaving ``vismem/`` on the
replica's ``sys.path``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from vismem.core.errors import ConfigError, VismemError

#: File patterns never shipped (the job package's excludes that name files).
_SKIP_FILES = ("*.pyc", "*.parquet", "*.png", "*.webp")
_TOP = "vismem-code"


def build_zip(module_dir: Path, dest: Path) -> Path:
    """Zip the ``vismem`` namespace folder ``module_dir`` (links followed) into ``dest``, as
    ``vismem-code/vismem/...``; returns ``dest``."""
    entries = []
    for root, dirs, files in os.walk(module_dir, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__" and not d.endswith(".egg-info"))
        for f in sorted(files):
            if f.startswith(".") or any(fnmatch.fnmatch(f, p) for p in _SKIP_FILES):
                continue
            path = Path(root) / f
            entries.append((f"{_TOP}/vismem/{path.relative_to(module_dir).as_posix()}", path))
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, path in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return dest


def upload_code(module_dir: Path, prefix: str) -> str:
    """The URI of the code zip of ``module_dir`` under ``prefix`` (``s3://BUCKET/PREFIX``),
    uploaded unless an identical one is there."""
    from vismem.core.store import Store

    store = Store.open(prefix)
    with tempfile.TemporaryDirectory(prefix="vismem-code-") as tmp:
        zpath = build_zip(module_dir, Path(tmp) / "code.zip")
        name = f"vismem-code-{hashlib.sha256(zpath.read_bytes()).hexdigest()[:16]}.zip"
        if not store.exists(name):
            store.put_file(name, zpath)
    return store.url(name)


def scales_to_zero(cfg: dict[str, Any]) -> list[str]:
    """The apps of Serve config ``cfg`` with a deployment whose autoscaling floor is 0."""
    out = []
    for app in cfg["applications"]:
        floors = [(d.get("autoscaling_config") or {}).get("min_replicas", 1) for d in app.get("deployments") or []]
        floors += [((c.get("deployment_config") or {}).get("autoscaling_config") or {}).get("min_replicas", 1)
                   for c in (app.get("args") or {}).get("llm_configs") or []]
        if 0 in floors:
            out.append(app["name"])
    return out


def app_runtime_env(client: Any, cfg: dict[str, Any], code: str | None, local: bool) -> dict[str, Any]:
    """What vismem's apps carry: the client's git revision and, unless they run on the local Ray
    `up` started from this checkout (or ``code`` is ``image``), the code itself as ``py_modules``
    (the job package's ``vismem`` namespace), so replicas run this revision, not the image's.

    ``code``: ``dashboard`` (default: uploaded into the cluster's GCS, which Ray deletes once no
    replica holds it, so refused for apps that scale to zero), ``s3://BUCKET/PREFIX`` (a zip in
    object storage, :func:`upload_code`) or ``image``."""
    from vismem.core.paths import repo_root
    from vismem.pipelines import jobpackage
    from vismem.pipelines.commands.jobs import RUNTIME_EXCLUDES
    from vismem.pipelines.manifest import GIT_REVISION_VAR, git_revision

    env: dict[str, Any] = {"env_vars": {GIT_REVISION_VAR: git_revision(repo_root())}}
    code = code or "dashboard"
    if local or code == "image":
        return env
    if code != "dashboard" and not code.startswith(("s3://", "file://")):
        raise ConfigError(f"--code {code!r}: give dashboard, image or s3://BUCKET/PREFIX")
    if code == "dashboard" and (zero := scales_to_zero(cfg)):
        raise ConfigError(f"{', '.join(zero)} can scale to zero, and code uploaded through the dashboard is deleted "
                          "once no replica holds it: pass --code s3://BUCKET/PREFIX (or --code image)")
    with tempfile.TemporaryDirectory(prefix="vismem-serve-") as pkg:
        module_dir = jobpackage.code_package(repo_root(), Path(pkg))
        if code != "dashboard":
            return {**env, "py_modules": [upload_code(module_dir, code)]}
        mods = {"py_modules": [str(module_dir)], "excludes": RUNTIME_EXCLUDES}
        try:
            client._upload_py_modules_if_needed(mods)  # Ray's own packer and upload, as submit_job uses
        except Exception as err:  # noqa: BLE001 - refused upload, too large, old dashboard
            raise VismemError(f"cannot ship the code to the cluster's Serve apps: {err}") from None
    return {**env, "py_modules": mods["py_modules"]}
