"""Where the checkout and its data live (no run config needed)."""

from __future__ import annotations

import tempfile
from pathlib import Path

#: The default ``data_dir`` of a run: the shared data beside the checkout.
DEFAULT_DATA_DIR = "../shared/data"


def repo_root() -> Path:
    """The checkout (or installed tree) that holds the project's top-level packages."""
    return Path(__file__).resolve().parent.parent


def resolve_data_dir(data_dir: str | Path = DEFAULT_DATA_DIR) -> Path:
    """``data_dir`` resolved against the repo root (then the cwd) when relative; an ``s3://``
    data dir is copied to a node-local folder first (:mod:`vismem.core.datadir`)."""
    from vismem.core.datadir import is_remote, materialise

    if is_remote(data_dir):
        return materialise(str(data_dir))
    p = Path(data_dir)
    if p.is_absolute():
        return p
    try:
        cwd: Path | None = Path.cwd()
    except FileNotFoundError:  # a Ray job driver's working_dir is removed once it attaches to the cluster
        cwd = None
    for base in (repo_root(), cwd):
        if base is not None and (base / p).exists():
            return (base / p).resolve()
    return (repo_root() / p).resolve()


def local_dir(path: str | Path) -> Path:
    """``path`` made absolute against the cwd, or, when the cwd no longer exists, under the
    temp dir (``<tmp>/vismem/<path>``).

    A Ray job driver runs in its job's extracted ``working_dir``; Ray may remove that folder
    while the driver still runs (an agent re-extracting the package), and ``Path.resolve()``
    of a relative path then raises ``FileNotFoundError``. The run's local files (its log, the
    report copy) must still have a place, so a job whose folder vanished still finishes.
    """
    p = Path(path)
    if p.is_absolute():
        return p
    try:
        return Path.cwd() / p
    except FileNotFoundError:
        return Path(tempfile.gettempdir()) / "vismem" / p
