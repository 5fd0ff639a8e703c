"""vismem pipelines: run config, object store, Ray start-up, the CLI and the Ray Data jobs."""

from pipelines.config import RunConfig, load_config
from pipelines.errors import ConfigError, DataError, StoreError, VismemError
from pipelines.store import Store

__all__ = ["RunConfig", "load_config", "Store", "VismemError", "ConfigError", "StoreError", "DataError"]
