"""The typed run context every stage gets, and the run's view of its data.

A stage's ``run(ctx)`` sees the frozen config, the open store, the run's local log folder, the
manifest and a logger; nothing else is global. Helpers here turn config fields into the things
stages share (the data folder, the storefront catalogue).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vismem.core.paths import resolve_data_dir as _resolve

if TYPE_CHECKING:
    from vismem.core.store import Store
    from vismem.env.storefront.catalog import Catalog
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.manifest import Manifest


@dataclass
class RunContext:
    """What a stage gets: the config, the store, the run's id/dirs, the manifest and a logger.

    ``store_env`` holds the variables workers need to reach the store (credentials, endpoint).
    """

    config: "RunConfig"
    store: "Store"
    run_dir: Path
    manifest: "Manifest"
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("vismem"))
    store_env: dict[str, str] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.config.run_id

    @property
    def run_prefix(self) -> str:
        """Store prefix of this run's own outputs: ``runs/<run_id>``."""
        return f"runs/{self.run_id}"

    @property
    def data_dir(self) -> Path:
        return resolve_data_dir(self.config)

    @property
    def worker_data_dir(self) -> str:
        """``data_dir`` as actors on other nodes must be told it (they resolve it themselves).

        A data folder that travels inside the job's working dir (``vismem submit`` ships small
        datasets as ``_data/``) lies at a different path on every node, and an ``s3://`` data dir
        is copied to each node's own cache: both are passed as written. Any other folder is
        passed resolved, so a path relative to the driver's cwd means the same on a worker.
        """
        raw = str(self.config.data_dir)
        from vismem.core.datadir import is_remote
        from vismem.core.paths import repo_root

        if is_remote(raw) or (not Path(raw).is_absolute() and self.data_dir.is_relative_to(repo_root().resolve())):
            return raw
        return str(self.data_dir)


def resolve_data_dir(config: "RunConfig") -> Path:
    """``config.data_dir`` resolved against the repo root (then the cwd)."""
    return _resolve(config.data_dir)


def catalog_from_config(config: "RunConfig") -> "Catalog":
    """The storefront catalogue of a run config (its seed and ``catalog.colour_order``)."""
    from vismem.core.errors import DataError
    from vismem.env.storefront.catalog import CUE_FILE, SEED_FILE, dmv_dir, load_catalog
    from vismem.pipelines.datafetch import fetch_hint

    data_dir = resolve_data_dir(config)
    for name in (SEED_FILE, CUE_FILE):
        if not (dmv_dir(data_dir) / name).is_file():
            want = data_dir / "dmv-bench" / name
            raise DataError(f"{want}: file not found (data_dir {config.data_dir!r}){fetch_hint(want, data_dir)}")
    return load_catalog(data_dir, seed=config.seed, colour_order=config.catalog.colour_order)
