"""A real multi-raylet Ray cluster on loopback, for cluster tests and trying `vismem submit` locally.

``ray start --head`` plus extra raylets joining it, every listener on 127.0.0.1. What makes it
behave like a cluster of separate machines, and leave nothing behind:

* **One temp/session dir per raylet** (``<root>/head``, ``<root>/w1``, ...). A raylet started
  without ``--temp-dir`` takes the head's, and two raylets sharing one ``runtime_resources/``
  fight over a job's package: the second one's runtime-env agent deletes and re-extracts the
  working dir under the running driver (``FileNotFoundError`` from ``Path.cwd()``).
* **Every process is tracked**: ``ray start`` runs with a fresh token in its environment
  (``VISMEM_LOCALCLUSTER``), which every process it spawns inherits (GCS, raylets, dashboard and
  runtime-env agents, workers, job drivers and what they start, Chromium included), and nothing
  else carries, and with them every process below them (the agents rename themselves, which
  hides the token). :meth:`LocalRayCluster.stop` ends them -- SIGTERM, then SIGKILL, repeated
  while any remain (agents re-parented to init ignore SIGTERM) -- and a lifeline
  (:mod:`vismem.core.lifeline`) does the same if the owner dies without stopping it, then
  removes the temp dirs (``root``), as ``stop()`` does.
* **Every listener on 127.0.0.1**, the Ray Client server included (it follows the node IP,
  which Ray would otherwise turn into the machine's outward address: see ``_LOOPBACK_ENV``);
  :meth:`LocalRayCluster.listeners` lists what the cluster's processes listen on.

Never ``ray stop``: it kills every Ray on the machine, other sessions' included.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from vismem.core.lifeline import Lifeline, alive, descendants, end_pids, pids_with_env, proc_files
from vismem.core.ports import free_ports, is_loopback  # noqa: F401 - is_loopback: this module's public face too

#: Environment variable carrying a cluster's token into every one of its processes.
TOKEN_VAR = "VISMEM_LOCALCLUSTER"


#: Ray resolves "127.0.0.1" to the machine's outward address (``resolve_ip_for_localhost``) unless
#: this is 0; then every Ray process -- agents and job drivers too, which connect to the GCS by
#: that address -- keeps to loopback, and every listener that follows the node IP (GCS, Ray Client
#: server, agents) stays on 127.0.0.1.
_LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}

#: ``ray`` with the node IP taken as given, and joining a head allowed: the variable above also
#: makes ``ray start --address`` refuse to start a worker node, a check only this CLI makes.
_RAY_CLI = ("import sys\nimport ray._private.services as s\nimport ray._private.ray_constants as c\n"
            "s.resolve_ip_for_localhost = lambda host: host\nc.ENABLE_RAY_CLUSTER = True\n"
            "from ray.scripts.scripts import main\nsys.argv[0] = 'ray'\nsys.exit(main())")

#: Listeners only the head has (GCS, dashboard, Ray Client server) and those of every raylet.
_HEAD_FLAGS = ("port", "dashboard-port", "ray-client-server-port")
_NODE_FLAGS = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
               "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port")


@dataclass
class LocalRayCluster:
    """``with LocalRayCluster(workers=1) as c: c.address, c.dashboard_url``.

    ``root`` holds one temp dir per raylet; it is short because Ray's Unix socket paths live
    under it (the kernel caps them at 107 bytes).
    """

    head_cpus: float = 1
    workers: int = 1
    worker_cpus: float = 1
    object_store_mb: int = 200
    env: dict[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=lambda: Path(f"/tmp/vmr{secrets.token_hex(3)}"))
    gcs_port: int = 0
    dashboard_port: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    #: End the cluster with the process that started it (False: it outlives its starter, as
    #: ``vismem serve up``'s cluster must; whoever holds ``root`` and ``token`` stops it).
    lifeline: bool = True
    _lifeline: Lifeline | None = field(default=None, repr=False)
    _seen: set[int] = field(default_factory=set, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    @property
    def attach_env(self) -> dict[str, str]:
        """What a driver started on this machine needs in its environment to attach with
        ``--address`` (``vismem run --address``): without it Ray turns 127.0.0.1 into the machine's
        outward address, where nothing of this cluster listens."""
        return dict(_LOOPBACK_ENV)

    @property
    def temp_dir(self) -> Path:
        """The head's temp dir (its session dir, logs and job packages live under it)."""
        return self.root / "head"

    def raylet_dirs(self) -> list[Path]:
        """The temp dir of each raylet, head first."""
        return [self.temp_dir, *(self.root / f"w{i}" for i in range(1, self.workers + 1))]

    def _env(self) -> dict[str, str]:
        env = {**os.environ, "RAY_AUTH_MODE": "disabled", **_LOOPBACK_ENV, **self.env, TOKEN_VAR: self.token}
        # The job driver must run with this interpreter (the one with vismem installed).
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        # A caller's own Ray address must not make `ray start` join someone else's cluster.
        env.pop("RAY_ADDRESS", None)
        return env

    def _run(self, args: list[str]) -> None:
        r = subprocess.run([sys.executable, "-c", _RAY_CLI, *args], capture_output=True, text=True, env=self._env(), timeout=300,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"`ray {' '.join(args[:2])}` failed: {r.stderr[-1500:] or r.stdout[-1500:]}")

    def start(self) -> "LocalRayCluster":
        """Start the head and the worker raylets; returns once every node is alive.

        A start that fails (a ``ray start`` that times out on a loaded machine) ends what it
        started and removes its temp dirs before raising: a caller without ``with`` leaks nothing.
        One that failed because a port was taken meanwhile starts again on fresh ports (3 tries).
        """
        for attempt in range(3):
            try:
                return self._start()
            except BaseException as e:
                self.stop()
                # A port free when picked can be bound by another process before Ray binds it.
                if attempt == 2 or not _port_taken(e):
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> "LocalRayCluster":
        for d in self.raylet_dirs():
            d.mkdir(parents=True, exist_ok=True)
        # Armed before the first process exists: an owner killed mid-start leaves nothing either.
        if self.lifeline:
            self._lifeline = Lifeline(sweep_env=(TOKEN_VAR, self.token), grace_s=3.0, remove=self.root)
        # Ray's defaults are fixed (e.g. the dashboard agent on 52365), so a second Ray on the
        # machine -- a test session's, a user's -- would collide and leave the node without a job
        # agent; and ports picked one by one can repeat (Ray refuses a head whose dashboard port
        # is its GCS port): one free_ports call picks every port of the cluster, all distinct.
        ports = free_ports(len(_HEAD_FLAGS) + len(_NODE_FLAGS) * (1 + self.workers))
        self.gcs_port, self.dashboard_port = ports[0], ports[1]
        head_ports, *worker_ports = _port_flags(ports)
        common = ["--node-ip-address=127.0.0.1", f"--object-store-memory={self.object_store_mb * 2**20}",
                  "--disable-usage-stats"]
        self._run(["start", "--head", f"--num-cpus={self.head_cpus}", "--dashboard-host=127.0.0.1",
                   f"--temp-dir={self.temp_dir}", "--include-dashboard=true", *common, *head_ports])
        for d, flags in zip(self.raylet_dirs()[1:], worker_ports):
            self._run(["start", f"--address={self.address}", f"--num-cpus={self.worker_cpus}",
                       f"--temp-dir={d}", *common, *flags])
        self._wait_nodes(1 + self.workers)
        self.pids()
        return self

    def _wait_nodes(self, n: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if self.alive_nodes() >= n:
                    return
            except Exception:  # the dashboard is still starting
                pass
            time.sleep(0.5)
        raise RuntimeError(f"local Ray cluster did not reach {n} nodes in {timeout_s}s")

    def alive_nodes(self) -> int:
        """Raylets the GCS reports alive (through the dashboard)."""
        import json
        import urllib.request

        with urllib.request.urlopen(f"{self.dashboard_url}/nodes?view=summary", timeout=3) as resp:
            body = json.loads(resp.read())
        summary = body.get("data", {}).get("summary", [])
        return sum(1 for n in summary if n.get("raylet", {}).get("state") == "ALIVE")

    def pids(self) -> list[int]:
        """Live processes of this cluster: those carrying its token and every process below them;
        every pid ever seen is remembered for stop().

        The token alone misses Ray's dashboard and runtime-env agents: they rename themselves
        (``setproctitle``), which overwrites the environment /proc shows. They are the raylets'
        children, found while their raylet lives and ended with it.
        """
        mine = {os.getpid(), *((self._lifeline.pid,) if self._lifeline is not None else ())}
        found = [p for p in descendants(pids_with_env(TOKEN_VAR, self.token, exclude=mine))
                 if p not in mine and alive(p)]
        self._seen.update(found)
        return found

    def raylet_pids(self) -> dict[str, int]:
        """``{temp dir name: raylet pid}`` (``head``, ``w1``, ...), to kill one node in a test."""
        out = {}
        for pid in self.pids():
            cmd = _cmdline(pid)
            if "/raylet/raylet" in cmd.split(" ", 1)[0]:
                for d in self.raylet_dirs():
                    if f"{d}/" in cmd:
                        out[d.name] = pid
        return out

    def listeners(self) -> list[tuple[int, str, int]]:
        """``(pid, address, port)`` of every TCP socket this cluster's processes listen on."""
        return listening_sockets(self.pids())

    def leftovers(self) -> list[int]:
        """Processes of this cluster still alive (tracked by token, and every pid ever seen)."""
        return sorted({*self.pids(), *(p for p in self._seen if alive(p))})

    def stop(self, timeout_s: float = 30) -> list[int]:
        """End every process of the cluster and remove its temp dirs; returns what survived (none)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            left = self.leftovers()
            if not left:
                break
            end_pids(left, grace_s=2.0)
        if self._lifeline is not None:
            self._lifeline.close()
            self._lifeline = None
        shutil.rmtree(self.root, ignore_errors=True)
        return self.leftovers()

    def __enter__(self) -> "LocalRayCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _port_flags(ports: list[int]) -> list[list[str]]:
    """``ray start`` port flags per node, head first: the head's own listeners, then each node's."""
    head = [f"--{flag}={p}" for flag, p in zip(_HEAD_FLAGS, ports)]
    rest = ports[len(_HEAD_FLAGS):]
    n = len(_NODE_FLAGS)
    nodes = [[f"--{flag}={p}" for flag, p in zip(_NODE_FLAGS, rest[i:i + n])] for i in range(0, len(rest), n)]
    return [head + nodes[0], *nodes[1:]]


def _port_taken(e: BaseException) -> bool:
    """Whether a failed ``ray start`` says one of its ports was taken (Ray's own wordings)."""
    text = str(e)
    return isinstance(e, RuntimeError) and any(
        w in text for w in ("already occupied", "used by other components", "Address already in use"))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _listening_inodes() -> dict[int, tuple[str, int]]:
    """``socket inode -> (address, port)`` of every listening TCP socket (IPv4 and IPv6)."""
    out: dict[int, tuple[str, int]] = {}
    for name, width in (("tcp", 8), ("tcp6", 32)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) < 10 or parts[3] != "0A":  # 0A = LISTEN
                continue
            hexaddr, hexport = parts[1].split(":")
            out[int(parts[9])] = (_addr(hexaddr, width), int(hexport, 16))
    return out


def _addr(hexaddr: str, width: int) -> str:
    raw = bytes.fromhex(hexaddr)
    # /proc/net/tcp* writes each 32-bit word in host (little-endian) order.
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, raw)


def listening_sockets(pids: list[int]) -> list[tuple[int, str, int]]:
    """``(pid, address, port)`` of the TCP sockets ``pids`` listen on (those we may inspect)."""
    inodes = _listening_inodes()
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and int(link[8:-1]) in inodes:
                out.append((pid, *inodes[int(link[8:-1])]))
    return sorted(set(out))


_RAY_CMD = re.compile(r"(^|[\s/])ray(::|-|/)")


def ray_port_holders(ports: list[int]) -> list[int]:
    """Pids of Ray processes (``ray::Name``, ``ray-dashboard``, or a program under a ``ray/``
    folder) listening on any of ``ports``.

    A process that renamed itself and was re-parented to init carries neither the cluster's
    token nor a parent below it; the port it still holds is how it is found.
    """
    return [pid for pid, cmd in port_holders(ports) if _RAY_CMD.search(cmd)]


def port_holders(ports: list[int]) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every process (that we may inspect) listening on any of ``ports``."""
    wanted = set(ports)
    pids = [pid for pid, _ in proc_files("stat")]
    return [(pid, _cmdline(pid)) for pid in sorted({pid for pid, _, port in listening_sockets(pids) if port in wanted})]
