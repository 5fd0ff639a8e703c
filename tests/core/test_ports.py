"""vismem.core.ports: many ports picked in one call are distinct and free, twins included."""

from __future__ import annotations

import socket

from vismem.core.ports import free_ports


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_ports_of_one_call_are_distinct_and_free():
    # 300 picks by bind-and-close, one at a time, repeat a port with probability ~0.8 on Linux's
    # ~28k ephemeral ports; held while picking, they cannot.
    ports = free_ports(300)
    assert len(ports) == 300 and len(set(ports)) == 300
    assert all(_bindable(p) for p in ports[:20])


def test_twins_are_free_and_collide_with_no_port():
    ports = free_ports(40, twin_offset=10000)
    twins = {p + 10000 for p in ports}
    assert len(set(ports)) == 40 and all(p + 10000 <= 65535 for p in ports)
    assert not twins & set(ports)
    assert all(_bindable(t) for t in list(twins)[:10])


def test_a_held_port_is_never_handed_out():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        taken = s.getsockname()[1]
        assert taken not in free_ports(200)
