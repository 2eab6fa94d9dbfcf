"""Session fixture ``local_model``: the real embedded llama.cpp server with SmolLM2, started once.

    @pytest.mark.local_model
    def test_x(local_model):
        client = make_chat_client(local_model.provider_settings())

The fixture starts ``LocalModelServer`` on a free port, waits until /v1/models lists the model,
yields a handle with ``base_url`` (ending /v1), ``model`` (``smollm2-135m-instruct``) and
``provider_settings(**overrides)`` (a ``ProviderSettings`` aimed at it, one request at a time, since
the server serves requests serially), and stops it at the end of the session. If llama-cpp-python
or the weights package is missing, tests are skipped with the reason, except when ``CI=true``:
there the fixture fails, because CI must run them. Server output goes to a log file under
pytest's session temp dir, named in any failure message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest

from oracle.local_model import LocalModelServer, LocalModelUnavailable, check_available


@dataclass(frozen=True)
class LocalModelHandle:
    base_url: str
    model: str
    server: LocalModelServer

    def provider_settings(self, **overrides: Any):
        from oracle.config.model import ProviderSettings

        values: dict[str, Any] = dict(kind="openai", base_url=self.base_url, model=self.model,
                                      timeout_s=120.0, max_retries=1, concurrency=1)
        values.update(overrides)
        return ProviderSettings(**values)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def local_model(tmp_path_factory):
    try:
        gguf = check_available()
    except LocalModelUnavailable as exc:
        if _in_ci():
            pytest.fail(f"local model required in CI: {exc}")
        pytest.skip(f"local model not available: {exc}")
    log_path = tmp_path_factory.mktemp("local_model") / "llama_server.log"
    server = LocalModelServer(model_path=gguf, log_path=log_path)
    try:
        server.start(ready_timeout_s=120)
    except RuntimeError as exc:
        pytest.fail(f"local model server did not start: {exc} (log: {log_path})")
    try:
        yield LocalModelHandle(server.base_url, server.model, server)
    finally:
        server.stop()
