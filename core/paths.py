"""Where the checkout and its data live (no run config needed).

The default ``data_dir`` (:data:`DEFAULT_DATA_DIR`) is resolved by :func:`default_data_dir`:
``$VISMEM_DATA_DIR`` when set, else the shared data beside the checkout when that folder exists
(a workspace, CI), else a per-user folder (``$XDG_DATA_HOME/vismem/data``), so a fresh clone
anywhere has a data dir the main job can fetch its small datasets into.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The default ``data_dir`` of a run: the shared data beside the checkout (when it exists).
DEFAULT_DATA_DIR = "../shared/data"
#: Environment variable naming the data dir a default ``data_dir`` means (beats both defaults).
DATA_DIR_VAR = "VISMEM_DATA_DIR"


def repo_root() -> Path:
    """The checkout (or installed tree) that holds the project's top-level packages."""
    return Path(__file__).resolve().parent.parent


def user_data_dir() -> Path:
    """The per-user data dir: ``$XDG_DATA_HOME/vismem/data`` (``~/.local/share/vismem/data``)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base).expanduser().resolve() / "vismem" / "data"


def default_data_dir() -> tuple[Path, str]:
    """The folder a default ``data_dir`` means, and why it is that one (for ``vismem data``)."""
    env = os.environ.get(DATA_DIR_VAR)
    if env:
        return Path(env).expanduser().resolve(), f"${DATA_DIR_VAR}"
    shared = _existing(Path(DEFAULT_DATA_DIR))
    if shared is not None:
        return shared, f"the shared data beside the checkout, {DEFAULT_DATA_DIR}"
    return user_data_dir(), (f"the per-user data dir: no {DEFAULT_DATA_DIR} beside the checkout; "
                             f"data_dir or ${DATA_DIR_VAR} chooses another")


def _existing(p: Path) -> Path | None:
    """Relative ``p`` under the repo root, then the cwd, where it exists."""
    try:
        cwd: Path | None = Path.cwd()
    except FileNotFoundError:  # a Ray job driver's working_dir is removed once it attaches to the cluster
        cwd = None
    for base in (repo_root(), cwd):
        if base is not None and (base / p).exists():
            return (base / p).resolve()
    return None


def resolve_data_dir(data_dir: str | Path = DEFAULT_DATA_DIR) -> Path:
    """``data_dir`` resolved against the repo root (then the cwd) when relative; the default
    one as :func:`default_data_dir` says; an ``s3://`` data dir is copied to a node-local
    folder first (:mod:`vismem.core.datadir`)."""
    from vismem.core.datadir import is_remote, materialise

    if is_remote(data_dir):
        return materialise(str(data_dir))
    if str(data_dir) == DEFAULT_DATA_DIR:
        return default_data_dir()[0]
    p = Path(data_dir)
    if p.is_absolute():
        return p
    found = _existing(p)
    if found is not None:
        return found
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
