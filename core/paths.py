"""Where the checkout and its data live (no run config needed)."""

from __future__ import annotations

from pathlib import Path

#: The default ``data_dir`` of a run: the shared data beside the checkout.
DEFAULT_DATA_DIR = "../shared/data"


def repo_root() -> Path:
    """The checkout (or installed tree) that holds the project's top-level packages."""
    return Path(__file__).resolve().parent.parent


def resolve_data_dir(data_dir: str | Path = DEFAULT_DATA_DIR) -> Path:
    """``data_dir`` resolved against the repo root (then the cwd) when relative."""
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
