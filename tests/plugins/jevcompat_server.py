"""jevcompat's reference System One server as a real subprocess on a loopback port, for tests.

``jevcompat mock`` is a third-party server with a deterministic fake model and injectable faults;
``with jevcompat_mock(("nan",), key="k") as base_url: ...`` starts one, waits until it answers,
and stops it afterwards. Used by tests/test_decision_conformance.py and the decision judge tests.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from typing import Iterator

import httpx
import pytest

JEVCOMPAT = [sys.executable, "-c", "import sys; from jevcompat.cli import main; sys.exit(main(sys.argv[1:]))"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jevcompat_mock(faults: tuple[str, ...] = (), key: str | None = None) -> Iterator[str]:
    """``jevcompat mock`` in a subprocess on a free loopback port; yields its base URL once it answers."""
    for _ in range(3):  # a port taken between choosing and binding: choose again
        port = _free_port()
        args = [*JEVCOMPAT, "mock", "--host", "127.0.0.1", "--port", str(port)]
        for fault in faults:
            args += ["--fault", fault]
        if key:
            args += ["--key", key]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline:
                try:  # any HTTP answer (a 404 from the models-404 fault too) means it is serving
                    httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            else:
                if proc.poll() is None:
                    pytest.fail("jevcompat mock did not answer within 30 s")
                continue  # exited (port taken): try another port
            yield f"http://127.0.0.1:{port}/v1"
            return
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stderr:
                proc.stderr.close()
    pytest.fail("could not start jevcompat mock on a free port")
