"""Serve replicas on a loopback cluster listen on loopback only.

Ray Serve 2.60 starts an inter-deployment gRPC server in every replica bound to ``[::]:0`` -- all
interfaces, whatever the node's address and ``http_options.host`` -- and has no setting for it
(``ray/serve/_private/replica.py``, ``_on_initialized``). On a cluster whose nodes are
``127.0.0.1`` (`vismem serve up` locally, the loopback clusters of tests and the engine tier) that
is a port open to the network nobody asked for. Other replicas reach a replica at its node's
address, so binding that address instead loses nothing.

The fix runs inside each replica process: Ray runs a worker's setup hook (the module path in
:data:`HOOK_ENV_VAR`, the variable ``runtime_env.worker_process_setup_hook`` sets, here set
directly because Serve applications do not go through ``ray.init``) before the replica starts, and
:func:`bind_replica_grpc` makes the replica bind its node's address when that is loopback. On a
node with a routable address it changes nothing.
"""

from __future__ import annotations

from typing import Any

from vismem.core.ports import is_loopback

#: ``ray._private.ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR`` (a test holds the two equal).
HOOK_ENV_VAR = "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR"
HOOK = "vismem.serve.loopback.bind_replica_grpc"
_ALL = "[::]:"


def hook_env(host: str) -> dict[str, str]:
    """The env var that installs :func:`bind_replica_grpc` in an app's replicas, for a proxy on
    ``host``: only where the user asked for loopback serving (nothing otherwise)."""
    return {HOOK_ENV_VAR: HOOK} if is_loopback(host) else {}


def loopback_address(address: str, node_ip: str) -> str:
    """``address`` as a replica should bind it on a node at ``node_ip``: ``[::]:PORT`` becomes
    ``NODE_IP:PORT`` on a loopback node; anything else is kept."""
    if address.startswith(_ALL) and is_loopback(node_ip):
        return f"{node_ip}:{address[len(_ALL):]}"
    return address


def bind_replica_grpc() -> None:
    """Ray worker setup hook: this process's Serve replica binds its inter-deployment gRPC server
    to the node's address when that is loopback (see the module doc)."""
    import ray
    from ray.serve._private import replica

    node_ip = ray.util.get_node_ip_address()
    original = replica.add_port_to_grpc_server
    if not is_loopback(node_ip) or getattr(original, "vismem_loopback", False):
        return

    def add_port(server: Any, address: str) -> int:
        return original(server, loopback_address(address, node_ip))

    add_port.vismem_loopback = True  # type: ignore[attr-defined]
    replica.add_port_to_grpc_server = add_port
