"""vismem pipelines: run config, object store, Ray start-up, the CLI and the Ray Data jobs."""

from pipelines.config import RunConfig, load_config
from core.errors import ConfigError, DataError, StoreError, VismemError
from core.store import Store

__all__ = ["RunConfig", "load_config", "Store", "VismemError", "ConfigError", "StoreError", "DataError"]
