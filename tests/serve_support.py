"""Start ``oracle serve`` as a real subprocess for the serve tests and stop it afterwards."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def need_serve_extra() -> None:
    """Skip without FastAPI/uvicorn on a developer machine; under CI the extra must be installed."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    else:
        pytest.importorskip("fastapi")
        pytest.importorskip("uvicorn")


def judge_config(base_url: str, **extra: Any) -> dict[str, Any]:
    """A config whose models are the scripted server at ``base_url`` (no retries, short timeouts)."""
    config: dict[str, Any] = {"providers": {"judge": {"kind": "openai", "base_url": base_url,
                                                      "model": "scripted-model", "timeout_s": 30.0,
                                                      "max_retries": 0}}}
    for key, value in extra.items():
        config[key] = value
    return config


class Served:
    def __init__(self, proc: subprocess.Popen, base_url: str, lines: "queue.Queue[str]") -> None:
        self.proc, self.base_url, self._lines = proc, base_url, lines

    def stderr_so_far(self) -> str:
        out = []
        while True:
            try:
                out.append(self._lines.get_nowait())
            except queue.Empty:
                return "".join(out)


@contextmanager
def serve(tmp_path: Path, *args: str, config: dict[str, Any] | None = None,
          env: dict[str, str] | None = None) -> Iterator[Served]:
    """``python -m oracle [--config C] serve --port 0 --store S ARGS``; yields once it listens."""
    cmd = [sys.executable, "-m", "oracle"]
    if config is not None:
        path = tmp_path / "serve-config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        cmd += ["--config", str(path)]
    cmd += ["serve", "--port", "0", "--store", str(tmp_path / "escalations.sqlite"), *args]
    full_env = {k: v for k, v in os.environ.items() if k != "ORACLE_SERVE_TOKEN"}  # only a test's own token
    full_env.update(env or {})
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    base_url, seen = None, []
    deadline = time.monotonic() + 60
    while base_url is None and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if "listening on " in line:
            base_url = line.split("listening on ", 1)[1].split()[0]
    if base_url is None:
        proc.kill()
        raise AssertionError("oracle serve did not start:\n" + "".join(seen) + "".join(_drain(lines)))
    try:
        yield Served(proc, base_url, lines)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _drain(lines: "queue.Queue[str]") -> list[str]:
    time.sleep(0.2)
    out = []
    while not lines.empty():
        out.append(lines.get_nowait())
    return out


def reference_task(task_id: str = "r1", **task: Any) -> dict[str, Any]:
    """A task the verifier checks against a reference answer: no model, no sandbox."""
    body = {"id": task_id, "prompt": "What is 2+2?", "reference": "4", "evaluator": "verifier"}
    body.update(task)
    return {"task": body, "trajectories": [{"id": "good", "answer": "4"}, {"id": "bad", "answer": "5"}]}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()
