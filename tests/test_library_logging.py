"""Library use writes nothing on stdout and configures no logging; its logs go through stdlib logging.

Run in a subprocess whose fd 1 is a pipe, so anything written to stdout by any layer (Python, a
C extension, a child process inheriting it) is caught, not only ``sys.stdout``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, logging, sys
from oracle import Oracle, OracleConfig
if {with_handler}:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
verifier_task = {{"task": {{"id": "v", "prompt": "What is 2+2?", "reference": "4"}},
                  "trajectories": [{{"id": "a", "answer": "4"}}]}}
judge_task = {{"task": {{"id": "j", "prompt": "Write a haiku about rain.", "criteria": ["Evocative"],
                         "evaluator": "llm_judge"}}, "trajectories": [{{"id": "a", "answer": "rain falls"}}]}}
cfg = OracleConfig(providers={{"judge": {{"kind": "openai", "base_url": "http://127.0.0.1:{port}/v1", "model": "m",
                                          "max_retries": 2, "backoff_base_s": 0.01, "timeout_s": 2}}}})
oracle = Oracle(cfg)
out = [oracle.evaluate(verifier_task).status.value, oracle.evaluate(judge_task).status.value]
structlog_loaded = "structlog" in sys.modules  # the library logs through stdlib logging alone
import structlog
with open({result!r}, "w") as fh:
    json.dump({{"statuses": out, "structlog_loaded": structlog_loaded,
               "structlog_configured": structlog.is_configured(),
               "oracle_handlers": [type(h).__name__ for h in logging.getLogger("oracle").handlers],
               "root_handlers": len(logging.getLogger().handlers)}}, fh)
"""


@contextmanager
def dropping_port() -> Iterator[int]:
    """A loopback port whose listener accepts each connection and closes it at once, like a server
    that dies mid-request: a transport failure the client retries (a port nothing listens on is
    not retried: that server is not running, and waiting will not start it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.settimeout(0.1)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    conn, _ = sock.accept()
                except OSError:  # the accept timed out: look at the stop flag again
                    continue
                conn.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield sock.getsockname()[1]
        finally:
            stop.set()
            thread.join()


def run(tmp_path: Path, with_handler: bool) -> tuple[subprocess.CompletedProcess[bytes], dict]:
    result = tmp_path / f"result-{with_handler}.json"
    with dropping_port() as port:
        code = SCRIPT.format(with_handler=with_handler, port=port, result=str(result))
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=180)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc, json.loads(result.read_text())


@pytest.mark.slow
def test_library_evaluation_writes_nothing_and_configures_nothing(tmp_path):
    proc, got = run(tmp_path, with_handler=False)
    assert got["statuses"] == ["ok", "failed"]  # the judge's server dropped every call: a failure, logged on retry
    assert proc.stdout == b""
    assert proc.stderr == b""  # no handler configured by the application: the library stays quiet
    assert got["structlog_loaded"] is False and got["structlog_configured"] is False
    assert got["root_handlers"] == 0
    assert got["oracle_handlers"] == ["NullHandler"]


@pytest.mark.slow
def test_library_logs_reach_the_applications_stdlib_handlers(tmp_path):
    proc, got = run(tmp_path, with_handler=True)
    assert got["statuses"] == ["ok", "failed"]
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    retries = [line for line in lines if line.startswith("oracle.providers INFO provider_retry ")]
    assert len(retries) == 2 and "attempt=1" in retries[0] and "base_url=" in retries[0], lines
