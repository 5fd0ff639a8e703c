"""vismem pipelines: run config, object store, Ray start-up, the CLI and the Ray Data jobs."""

from vismem.pipelines.config import RunConfig, load_config
from vismem.core.errors import ConfigError, DataError, StoreError, VismemError
from vismem.core.store import Store

__all__ = ["RunConfig", "load_config", "Store", "VismemError", "ConfigError", "StoreError", "DataError"]
