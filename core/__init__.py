"""The ground floor: imports nothing of the project, and every other package may import it.

Errors with exit codes (:mod:`core.errors`), the object store and its private local S3 server
(:mod:`core.store`, :mod:`core.s3server`), free loopback ports (:mod:`core.ports`), the frozen
config base (:mod:`core.config`), registries and component specs (:mod:`core.registry`),
progress bars (:mod:`core.progress`) and checkout paths (:mod:`core.paths`).
"""

from core.config import Frozen
from core.errors import ConfigError, DataError, StoreError, VismemError
from core.registry import ComponentSpec, Registry

__all__ = ["ComponentSpec", "ConfigError", "DataError", "Frozen", "Registry", "StoreError", "VismemError"]
