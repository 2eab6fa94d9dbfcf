"""Binding and running the viewer: the token rule of ``oracle serve``, a bound socket, uvicorn.

The socket is bound before uvicorn starts so the port (``--port 0``: a free one) is known and the
URL can be printed. Binding beyond loopback follows ``ServeSettings.check`` of ``oracle serve``: it
needs a bearer token (``$ORACLE_SERVE_TOKEN`` or ``--token-file``), which answering then requires.
"""

from __future__ import annotations

import socket
from typing import Any, Callable

from oracle.serve.settings import ServeSettings, is_loopback, read_token


def settings(host: str, port: int, token_file: str | None) -> ServeSettings:
    """Checked settings; raises ``ServeConfigError`` (a public bind without a token, a short token)."""
    token = read_token(token_file)
    value = ServeSettings(host=host, port=port, token=token if not is_loopback(host) else None)
    value.check()
    return value


def run(app: Any, sock: socket.socket, *, log_level: str, on_started: Callable[[], None]) -> bool:
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                on_started()

    server = Server(uvicorn.Config(app, lifespan="off", log_level=log_level, access_log=False,
                                   timeout_graceful_shutdown=5))
    server.run(sockets=[sock])
    return bool(server.started)
