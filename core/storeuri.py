"""Store URIs and what reopens a store: syntax checks (no I/O) and :class:`StoreSpec`."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from vismem.core.errors import StoreError
from vismem.core.secrets import strip_userinfo

_S3_BUCKET_OK = set("abcdefghijklmnopqrstuvwxyz0123456789-.")
#: Store URI schemes a run config accepts (``local-s3://`` is opened by the runner's weed server).
SCHEMES = ("file", "s3", "local-s3")


def bucket_problem(bucket: str) -> str | None:
    """Why ``bucket`` is not a valid S3 bucket name (None when it is)."""
    if not bucket:
        return "the URI names no bucket"
    if not (3 <= len(bucket) <= 63) or not set(bucket) <= _S3_BUCKET_OK:
        return f"bucket name {bucket!r} must be 3-63 chars of a-z, 0-9, '-' or '.'"
    if not (bucket[0].isalnum() and bucket[-1].isalnum()) or ".." in bucket:
        return f"bucket name {bucket!r} must start and end with a letter or digit, without '..'"
    return None


def validate_uri(uri: str) -> str:
    """Check a store URI's syntax at once (no I/O); returns it, raises :class:`StoreError` naming
    what is wrong. A bad bucket would otherwise surface only when a server or endpoint refuses it."""
    parsed = urlparse(uri)
    shown = strip_userinfo(uri)  # user-info is a secret: never printed
    if parsed.scheme not in SCHEMES or "://" not in uri:
        raise StoreError(f"invalid store URI {shown!r}: scheme must be file://, s3:// or local-s3://")
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost") or not parsed.path.startswith("/"):
            raise StoreError(f"invalid store URI {shown!r}: file URIs need an absolute path (file:///abs/path)")
        return uri
    if parsed.username or parsed.password:
        raise StoreError(f"invalid store URI {parsed.scheme}://***@{parsed.hostname}: credentials do not belong "
                         "in the URI (use AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)")
    problem = bucket_problem(parsed.netloc)
    if problem:
        raise StoreError(f"invalid store URI {shown!r}: {problem}")
    return uri


@dataclass(frozen=True)
class StoreSpec:
    """Everything needed to reopen a store in another process (credentials included)."""

    uri: str
    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = None
    #: A temporary key's session token (SSO, an assumed role): every S3 client sends it with the key.
    session_token: str | None = None
    #: The data dir of the local S3 server behind ``endpoint_url`` (``local-s3://`` runs): weed out of
    #: disk answers a bare "internal error", so a 5xx reply is told to be a full disk by this dir's free space.
    server_dir: str | None = None
