"""What a submitted job carries: the code, the small datasets it reads, and the client's config.

``vismem submit`` ships a *package folder* as the Ray job's ``working_dir``: symlinks to the
checkout's top-level entries (Ray's packer follows them; ``.git``, venvs and runs stay behind)
plus ``_data/`` holding the data files the run's stages read (:meth:`RunConfig.input_files`).
The job's config then says ``data_dir: _data``, a path relative to the code, so the driver and
every actor -- each node extracts the package at its own path -- find the data in their own copy.
Without this, the default ``data_dir: ../shared/data`` resolves inside Ray's temp dir on the
cluster and names nothing.

Data too large to travel in a job package (LongMemEval's big files, the official images) is read
from object storage instead: ``data_dir: s3://bucket/prefix`` is copied to each node's cache
(:mod:`vismem.core.datadir`) and nothing is shipped. A file over :data:`SHIP_LIMIT_MB` in a local data
dir is refused before anything is sent, with the way out in the message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vismem.core.datadir import is_remote
from vismem.core.errors import ConfigError

#: Largest total of data files shipped inside a job package (Ray's GCS keeps packages in memory).
SHIP_LIMIT_MB = 100
#: Top-level entries of the checkout never linked into the package (Ray's excludes drop the rest).
_NOT_SHIPPED = {".git", ".venv", "venv", "runs", ".runs", "_data", ".pytest_cache", "node_modules"}
#: The data folder inside the package, relative to the code (``RunConfig.data_dir`` in the job).
DATA = "_data"


def build(cfg: Any, repo: Path, dest: Path) -> tuple[str, list[str]]:
    """Fill ``dest`` with the job package of ``cfg``; returns ``(job config YAML, shipped files)``.

    Raises :class:`ConfigError` (nothing written beyond ``dest``) when a data file is missing or
    the data is too large to travel with the job.
    """
    data = cfg.model_dump(mode="json")
    shipped: list[str] = []
    if not is_remote(cfg.data_dir):
        from vismem.core.paths import resolve_data_dir

        root = resolve_data_dir(cfg.data_dir).resolve()
        files = {role: Path(p).resolve() for role, p in cfg.input_files().items()}
        for role, path in files.items():
            if not path.is_file():
                raise ConfigError(f"{role} file {path} not found: the job could not read it either "
                                  f"(fix data_dir, now {cfg.data_dir!r})")
        total = sum(p.stat().st_size for p in files.values()) / 2**20
        if total > SHIP_LIMIT_MB:
            raise ConfigError(f"the run's data files total {total:.0f} MiB, more than a job package carries "
                              f"({SHIP_LIMIT_MB} MiB): copy {root} to a bucket the cluster reads and submit with "
                              "--set data_dir=s3://BUCKET/PREFIX")
        for role, path in files.items():
            if path.is_relative_to(root):
                rel = path.relative_to(root)
            else:  # a dataset named by an absolute path elsewhere: shipped beside the rest
                rel = Path("_extra") / path.name
                if role == "memshot.dataset":
                    data["memshot"]["dataset_path"] = str(rel)
            link = dest / DATA / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path)
            shipped.append(str(rel))
        data["data_dir"] = DATA
    _link_code(repo, dest)
    return yaml.safe_dump(data, sort_keys=False), sorted(shipped)


def namespace_dirs(repo: Path) -> dict[str, str]:
    """``pyproject.toml``'s map of the ``vismem.`` namespace: sub-package name -> root folder."""
    import tomllib

    mapping = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name.split(".", 1)[1]: folder for name, folder in mapping.items() if "." in name}


def code_package(repo: Path, dest: Path) -> Path:
    """The ``vismem`` namespace package of ``repo`` laid out in ``dest`` (links, as a job package
    holds it); returns ``dest/vismem``, a folder a ``runtime_env``'s ``py_modules`` can ship."""
    _link_code(repo, dest)
    return dest / "vismem"


def _link_code(repo: Path, dest: Path) -> None:
    """Link the checkout into ``dest`` with the code laid out as its import names read.

    The folders live at the repository root but import as ``vismem.<folder>``; on the cluster the
    working dir is on ``sys.path`` with no install mapping them, so the package gets a real
    ``vismem/`` holding the namespace's own files and one link per folder. An image with the
    project installed would otherwise serve its own (older) copy of every ``vismem.*`` module.
    """
    folders = namespace_dirs(repo)
    ns = dest / "vismem"
    ns.mkdir()
    for f in sorted((repo / "vismem").iterdir()):
        if f.suffix == ".py":
            (ns / f.name).symlink_to(f)
    for name, folder in sorted(folders.items()):
        (ns / name).symlink_to(repo / folder)
    for entry in sorted(repo.iterdir()):
        if entry.name not in _NOT_SHIPPED and entry.name not in {*folders.values(), "vismem"}:
            (dest / entry.name).symlink_to(entry)
