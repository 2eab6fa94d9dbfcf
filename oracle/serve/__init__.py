"""Private: ``oracle serve``, the HTTP JSON API for callers that are not Python (optional extra
``serve``); its contract is the committed ``openapi.json``, not these modules.

    pip install 'oracle-router[serve]'
    oracle serve                      # 127.0.0.1:8765; anything wider needs a bearer token

Modules: ``settings`` (where it listens, limits, the token), ``guard`` (the ASGI layer that
enforces them), ``app`` (the endpoints over the library), ``jobs`` (evaluation jobs and batch
runs), ``api_models`` (request and response shapes), ``openapi_doc`` (the committed schema).
"""

from __future__ import annotations

from oracle.serve.settings import ServeConfigError, ServeSettings

__all__ = ["ServeConfigError", "ServeSettings", "create_app"]


def create_app(*args, **kwargs):  # type: ignore[no-untyped-def]
    """``oracle.serve.app.create_app`` (imported on use: FastAPI loads only when a server starts)."""
    from oracle.serve.app import create_app as create

    return create(*args, **kwargs)
