"""Run the two sides of the candidate/test channel as real processes, without a sandbox.

Each case forks a candidate process (``candidate_side.serve``) and a test process
(``test_side.run_isolated``) joined by a socket pair, exactly as a sandbox worker does, and returns
the test process's verdict. It is fast (a few milliseconds a case), so property tests can run many
cases; the sandboxed path is exercised separately through ``VerifierStrategy``. The driver imports
the runtime as the sandbox does: a copy of the package (``install_runtime``) in its start directory,
without the rest of ``oracle``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from oracle.sandbox.workers import install_runtime

_DRIVER = r'''
import json, os, socket, sys
from runtime import candidate_side, rpc, test_side, wire
cases = json.load(open(sys.argv[1]))
results = []
for case in cases:
    a, b = socket.socketpair()
    r, w = os.pipe()
    cpid = os.fork()
    if cpid == 0:
        b.close(); os.close(r); os.close(w)
        try:
            candidate_side.serve({"code": case["candidate"], "entry_point": case["test"].get("entry_point")},
                                 a.fileno())
        finally:
            os._exit(0)
    a.close()
    tpid = os.fork()
    if tpid == 0:
        os.close(r)
        try:
            verdict = test_side.run_isolated(dict(case["test"], channel_fd=b.fileno()))
        except BaseException as exc:
            verdict = {"outcome": "crash", "message": repr(exc)}
        os.write(w, json.dumps(verdict, default=repr).encode())
        os._exit(0)
    b.close(); os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(cpid, 0)
    os.waitpid(tpid, 0)
    results.append(json.loads(data) if data else {"outcome": "no verdict", "message": ""})
with open(sys.argv[2], "w") as fh:
    json.dump(results, fh)
'''


def run_cases(cases: list[dict], timeout: float = 120) -> list[dict]:
    """Verdicts for ``cases``: each ``{"candidate": source, "test": test spec}`` where the test spec
    is what the host sends the test process (kind, code or call, entry_point, prompt_code)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "cases.json", Path(tmp) / "verdicts.json"
        src.write_text(json.dumps(cases))
        install_runtime(Path(tmp))  # `python -c` puts its start directory, tmp, first on sys.path
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        proc = subprocess.run([sys.executable, "-c", _DRIVER, str(src), str(dst)], cwd=tmp,
                              env=env, capture_output=True, timeout=timeout)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
        return json.loads(dst.read_text())


def run_one(candidate: str, code: str, *, entry_point: str | None = None, prompt_code: str | None = None,
            kind: str = "assert") -> dict:
    return run_cases([{"candidate": candidate, "test": {"kind": kind, "code": code, "entry_point": entry_point,
                                                        "prompt_code": prompt_code}}])[0]
