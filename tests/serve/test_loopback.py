"""Serve replicas on a loopback cluster bind their inter-deployment gRPC server to loopback
(serve/loopback.py); the whole path on a real Serve is checked by the `serve up` end-to-end test."""

from __future__ import annotations

import pytest

from vismem.serve import loopback
from vismem.serve.deploy import serve_config


def test_the_hook_variable_is_rays():
    from ray._private import ray_constants

    assert loopback.HOOK_ENV_VAR == ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR


def test_the_patched_function_is_the_one_the_replica_binds_with():
    """If Ray stops binding ``[::]:0`` through this name, the hook would silently do nothing."""
    import inspect

    from ray.serve._private import replica

    src = inspect.getsource(replica)
    assert 'add_port_to_grpc_server(self._server, "[::]:0")' in src
    assert callable(replica.add_port_to_grpc_server)


@pytest.mark.parametrize("address, node, want", [
    ("[::]:0", "127.0.0.1", "127.0.0.1:0"),
    ("[::]:4321", "127.0.0.5", "127.0.0.5:4321"),
    ("[::]:0", "10.1.2.3", "[::]:0"),  # a routable node: Ray's own choice kept
    ("127.0.0.1:9", "127.0.0.1", "127.0.0.1:9"),
])
def test_loopback_address(address, node, want):
    assert loopback.loopback_address(address, node) == want


@pytest.mark.parametrize("host, on", [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                      ("0.0.0.0", False), ("10.0.0.2", False), ("node-a", False)])
def test_every_app_of_a_loopback_proxy_carries_the_hook(host, on):
    cfg = serve_config(["scripted-shopper", "minilm"], host=host, runtime_env={"env_vars": {"A": "1"}})
    for app in cfg["applications"]:
        env = app["runtime_env"]["env_vars"]
        assert env["A"] == "1"  # the caller's variables kept
        assert (env.get(loopback.HOOK_ENV_VAR) == loopback.HOOK) is on


def test_the_hook_rebinds_only_on_a_loopback_node(monkeypatch):
    import ray
    from ray.serve._private import replica

    seen = []
    monkeypatch.setattr(replica, "add_port_to_grpc_server", lambda server, address: seen.append(address) or 7)
    monkeypatch.setattr(ray.util, "get_node_ip_address", lambda: "10.0.0.4")
    loopback.bind_replica_grpc()
    assert replica.add_port_to_grpc_server(None, "[::]:0") == 7 and seen == ["[::]:0"]
    monkeypatch.setattr(ray.util, "get_node_ip_address", lambda: "127.0.0.1")
    loopback.bind_replica_grpc()
    loopback.bind_replica_grpc()  # twice (a reused worker): patched once
    assert replica.add_port_to_grpc_server(None, "[::]:0") == 7 and seen[-1] == "127.0.0.1:0" and len(seen) == 2
