"""The listening socket of ``oracle serve`` and ``oracle view``: bound before the server starts, so
the port is known (``--port 0`` gives a free one) and the URL can be printed first."""

from __future__ import annotations

import socket


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` (IPv6 when it has a colon, brackets allowed) and ``port``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    return sock
