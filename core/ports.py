"""Free TCP ports on loopback for the servers vismem starts itself (Ray, weed, Serve).

Asking the kernel for port 0 and closing the socket again, once per port, can hand out the same
port twice -- the kernel is free to reuse a port nobody holds -- and Ray refuses a start whose
dashboard and GCS share one. So every port of one start is picked while the others are still held.
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["free_ports"]


def free_ports(n: int, *, host: str = "127.0.0.1", twin_offset: int | None = None) -> list[int]:
    """``n`` distinct ports free on ``host`` now.

    ``twin_offset``: each port's ``port + twin_offset`` must be free as well (``weed`` derives
    its gRPC ports that way); the twins are held too, so none of them is another's port.
    """
    ports: list[int] = []
    held: list[socket.socket] = []
    try:
        while len(ports) < n:
            s = socket.socket()
            held.append(s)
            s.bind((host, 0))
            port = s.getsockname()[1]
            if twin_offset is not None and not _hold(host, port + twin_offset, held):
                continue  # s stays held: the kernel will not offer this port again in this call
            ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


def _hold(host: str, port: int, held: list[socket.socket]) -> bool:
    if port > 65535:
        return False
    s = socket.socket()
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        return False
    held.append(s)
    return True


def is_loopback(addr: str) -> bool:
    """``localhost``, 127.0.0.0/8, ``::1`` or an IPv4-mapped loopback address (``::ffff:127.x``),
    bare or in brackets: a host a user named, or an address a socket listens on."""
    if addr == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(addr.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)
