"""The ground floor: imports nothing of the project, and every other package may import it.

Errors with exit codes (:mod:`vismem.core.errors`), the object store and its private local S3 server
(:mod:`vismem.core.store`, :mod:`vismem.core.s3server`), free loopback ports (:mod:`vismem.core.ports`), the frozen
config base (:mod:`vismem.core.config`), registries and component specs (:mod:`vismem.core.registry`),
progress bars (:mod:`vismem.core.progress`) and checkout paths (:mod:`vismem.core.paths`).
"""

from vismem.core.config import Frozen
from vismem.core.errors import ConfigError, DataError, StoreError, VismemError
from vismem.core.registry import ComponentSpec, Registry

__all__ = ["ComponentSpec", "ConfigError", "DataError", "Frozen", "Registry", "StoreError", "VismemError"]
