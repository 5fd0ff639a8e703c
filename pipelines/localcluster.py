"""A real multi-raylet Ray cluster on loopback, for cluster tests and trying `vismem submit` locally.

``ray start --head`` plus extra raylets joining it, all bound to 127.0.0.1, each cluster with its
own short temp dir. Stopping kills only this cluster's processes (found by that temp dir and GCS
port), never other Ray instances on the machine — ``ray stop`` would kill them all.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_bin() -> str:
    exe = Path(sys.executable).parent / "ray"
    return str(exe) if exe.exists() else (shutil.which("ray") or "ray")


@dataclass
class LocalRayCluster:
    """``with LocalRayCluster(workers=1) as c: c.address, c.dashboard_url``."""

    head_cpus: float = 1
    workers: int = 1
    worker_cpus: float = 1
    object_store_mb: int = 200
    env: dict[str, str] = field(default_factory=dict)
    temp_dir: Path = field(default_factory=lambda: Path(f"/tmp/vmr{secrets.token_hex(3)}"))
    gcs_port: int = 0
    dashboard_port: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def _run(self, args: list[str]) -> None:
        env = {**os.environ, "RAY_AUTH_MODE": "disabled", **self.env}
        # The job driver must run with this interpreter (the one with vismem installed).
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        r = subprocess.run([_ray_bin(), *args], capture_output=True, text=True, env=env, timeout=180)
        if r.returncode != 0:
            raise RuntimeError(f"`ray {' '.join(args[:2])}` failed: {r.stderr[-1500:] or r.stdout[-1500:]}")

    @staticmethod
    def _node_ports() -> list[str]:
        """Free ports for every per-node listener. Ray's defaults are fixed (e.g. the dashboard
        agent on 52365), so a second Ray on the machine — a test session's, a user's — would
        collide and leave the node without a job agent."""
        return [f"--node-manager-port={_free_port()}", f"--object-manager-port={_free_port()}",
                f"--dashboard-agent-listen-port={_free_port()}", f"--dashboard-agent-grpc-port={_free_port()}",
                f"--metrics-export-port={_free_port()}", f"--runtime-env-agent-port={_free_port()}"]

    def start(self) -> "LocalRayCluster":
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        self.gcs_port, self.dashboard_port = _free_port(), _free_port()
        common = ["--node-ip-address=127.0.0.1", f"--object-store-memory={self.object_store_mb * 2**20}",
                  "--disable-usage-stats"]
        self._run(["start", "--head", f"--port={self.gcs_port}", f"--num-cpus={self.head_cpus}",
                   "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
                   f"--ray-client-server-port={_free_port()}", f"--temp-dir={self.temp_dir}",
                   "--include-dashboard=true", *common, *self._node_ports()])
        for _ in range(self.workers):
            self._run(["start", f"--address={self.address}", f"--num-cpus={self.worker_cpus}", *common,
                       *self._node_ports()])
        self._wait_nodes(1 + self.workers)
        return self

    def _wait_nodes(self, n: int, timeout_s: float = 60) -> None:
        import json
        import urllib.request

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.dashboard_url}/api/cluster_status", timeout=3) as resp:
                    body = json.loads(resp.read())
                healthy = body.get("data", {}).get("clusterStatus", {}).get("loadMetricsReport", {})
                nodes = self.alive_nodes()
                if nodes >= n and healthy is not None:
                    return
            except Exception:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"local Ray cluster did not reach {n} nodes in {timeout_s}s")

    def alive_nodes(self) -> int:
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.dashboard_url}/nodes?view=summary", timeout=3) as resp:
            body = json.loads(resp.read())
        summary = body.get("data", {}).get("summary", [])
        return sum(1 for n in summary if n.get("raylet", {}).get("state") == "ALIVE")

    def _pids(self) -> list[int]:
        marks = (str(self.temp_dir), f"127.0.0.1:{self.gcs_port}", f"gcs_server_port={self.gcs_port}")
        pids = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if any(m in cmd for m in marks):
                pids.append(int(proc.name))
        return pids

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
            pids = self._pids()
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while pids and time.monotonic() < deadline:
                pids = [p for p in pids if Path(f"/proc/{p}").exists() and _alive(p)]
                time.sleep(0.1)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LocalRayCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        return state != "Z"
    except OSError:
        return False
