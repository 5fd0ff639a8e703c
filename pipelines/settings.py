"""Where a run writes, and how Ray is started."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from vismem.core.config import Frozen


class StoreConfig(Frozen):
    """The object store every stage writes to."""

    uri: str = Field(
        "local-s3://vismem",
        description=(
            "Store root. `local-s3://BUCKET[/PREFIX]` starts a private S3 server (weed mini) on "
            "127.0.0.1 for the run; `s3://BUCKET[/PREFIX]` uses an external S3 endpoint; "
            "`file:///ABS/PATH` writes to a local directory."
        ),
    )
    endpoint_url: str | None = Field(
        None,
        description="S3 endpoint for `s3://` roots (e.g. http://minio:9000); None means AWS or $AWS_ENDPOINT_URL.",
    )
    region: str = Field("us-east-1", description="S3 region name passed to boto3, pyarrow and Polars.")

    @field_validator("uri")
    @classmethod
    def _valid_uri(cls, v: str) -> str:
        # Syntax (scheme, bucket name) is checked here, at load: a bad bucket used to surface
        # only after the local S3 server gave up on it, minutes later. The StoreError passes
        # through pydantic untouched (only ValueErrors are collected), so a bad store exits 3.
        from vismem.core.storeuri import validate_uri

        return validate_uri(v)


class RayConfig(Frozen):
    """How the driver reaches Ray."""

    address: str | None = Field(
        None,
        description="Ray address to attach to (`auto`, `ray://host:10001`, `host:6379`); None starts a local Ray.",
    )
    num_cpus: int | None = Field(
        None, ge=1, description="CPUs a local Ray may use; None means all of this machine's."
    )
    object_store_mb: int = Field(
        768, ge=128, description="Object store size of a local Ray, in MiB (kept small so 2-core laptops fit)."
    )
    actor_cpus: float = Field(
        0.5,
        gt=0,
        le=64,
        description=(
            "CPUs reserved per Ray Data actor. Fractional on small machines: with 1 CPU per actor "
            "on 2 cores Ray Data deadlocks (actors hold every CPU its tasks need)."
        ),
    )
    concurrency: int = Field(2, ge=1, description="Ray Data parallelism: actors or concurrent tasks per stage.")
    mode: Literal["local", "cluster"] = Field(
        "local", description="`local` starts Ray in-process; `cluster` requires `address`."
    )
