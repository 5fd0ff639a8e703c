"""Read-only commands share the local S3 server a running vismem owns (see :mod:`vismem.core.s3server`).

A ``vismem runs`` / ``report`` / ``store ls`` on a ``local-s3://`` store whose data dir a run holds
attaches to that run's server -- endpoint from the owner's ``server.json``, credentials from its
0600 ``credentials.json`` -- instead of being refused, and never stops it. When no server runs it
starts one as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from vismem.core.errors import StoreError
from vismem.core.lifeline import alive
from vismem.core.s3server import CREDENTIALS_FILE, STATE_FILE, USERS_GRACE_S, USERS_LOCK, LocalS3Server, ServerBusy, s3_env
@dataclass
class SharedServer:
    """A local S3 server another vismem process owns, attached to by a read-only command."""

    data_dir: Path
    owner_pid: int
    port: int
    access_key: str
    secret_key: str
    region: str
    _users: Any = field(default=None, repr=False)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return s3_env(self.endpoint_url, self.access_key, self.secret_key, self.region)

    def detach(self) -> None:
        """Stop using the server (never stops it)."""
        if self._users is not None:
            self._users.close()
            self._users = None


def _owner_pid(data_dir: Path) -> int | None:
    """The pid written in the owner lock when that process is alive, else None."""
    try:
        text = (data_dir / "owner.lock").read_text().split(" ")[0].strip()  # "<pid>[ read-only]"
    except OSError:
        return None
    return int(text) if text.isdigit() and alive(int(text)) else None


def _lock_free(data_dir: Path) -> bool:
    fh = open(data_dir / "owner.lock", "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        fh.close()


def _read_shared(data_dir: Path, owner: int, users: Any) -> SharedServer | None:
    """The published server of ``owner`` (None while not published); a file that is not ours or
    that others may read, or an endpoint off loopback, is refused rather than used."""
    try:
        if (data_dir / STATE_FILE).stat().st_uid != os.getuid():
            raise StoreError(f"{data_dir / STATE_FILE} belongs to another user; not attaching")
        state = json.loads((data_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("owner_pid") != owner or state.get("stopping"):
        return None  # a previous owner's file, an owner still starting, or one ending its server
    port = state.get("port")
    if state.get("host") != "127.0.0.1" or not isinstance(port, int) or not 0 < port < 65536:
        raise StoreError(f"{data_dir / STATE_FILE} names a server off loopback or no port; not attaching")
    cred_path = data_dir / CREDENTIALS_FILE
    try:
        st = cred_path.stat()
        creds = json.loads(cred_path.read_text())
    except (OSError, ValueError):
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise StoreError(f"{cred_path} is not private to this user (mode {st.st_mode & 0o777:o}); not attaching")
    return SharedServer(data_dir, owner, port, str(creds.get("access_key", "")), str(creds.get("secret_key", "")),
                        str(state.get("region") or "us-east-1"), users)


def attach(data_dir: Path, timeout_s: float = 30.0 + USERS_GRACE_S) -> SharedServer | None:
    """Attach to the server another live vismem process runs on ``data_dir``; None when none runs.

    Waits (up to ``timeout_s``) for an owner that is still starting to publish its server, or for
    one that is ending it to let the data dir go.
    """
    data_dir = Path(data_dir).resolve()
    deadline = time.monotonic() + timeout_s
    while True:
        owner = _owner_pid(data_dir)
        if owner is None:
            return None
        users = open(data_dir / USERS_LOCK, "a+")
        try:
            fcntl.flock(users, fcntl.LOCK_SH | fcntl.LOCK_NB)
            shared = _read_shared(data_dir, owner, users)
        except BlockingIOError:  # the owner is stopping its server
            shared = None
        except BaseException:
            users.close()
            raise
        if shared is not None:
            return shared
        users.close()
        if time.monotonic() >= deadline:
            if _lock_free(data_dir):
                return None  # the pid in the lock file was reused by another process
            raise StoreError(f"the vismem run (pid {owner}) using {data_dir} did not publish its S3 server or let it go "
                             f"({STATE_FILE}) within {timeout_s:.0f} s")
        time.sleep(0.1)


@contextlib.contextmanager
def serving(data_dir: Path, buckets: tuple[str, ...], region: str, *,
            share: bool) -> Iterator[LocalS3Server | SharedServer]:
    """The local S3 server of ``data_dir`` for a block: started and owned here, or, with
    ``share=True`` (read-only commands), the one a running vismem already serves, left running."""
    for _attempt in range(3):
        if share:
            shared = attach(data_dir)
            if shared is not None:
                try:
                    yield shared
                finally:
                    shared.detach()
                return
        server = LocalS3Server(data_dir=data_dir, buckets=buckets, region=region, read_only=share)
        try:
            server.start()
        except ServerBusy:
            if not share:
                raise
            continue  # someone took the dir between our look and our start: attach to theirs
        try:
            yield server
        finally:
            server.stop()
        return
    raise ServerBusy(f"the local S3 server of {data_dir} kept changing owners; try again")
