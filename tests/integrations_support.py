"""Samples shared by the framework adapter tests: verifier tasks (real sandbox, deterministic), a
judge task for the scripted server, and a judge endpoint that refuses connections (our failure)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

ADD_TESTS = [{"kind": "assert", "code": "assert add(1, 2) == 3", "name": "one_two"},
             {"kind": "call", "call": "add(20, 22)", "expected": 42, "name": "big"}]
ADD_SPEC = {"entry_point": "add", "tests": ADD_TESTS}
GOOD_ADD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD_ADD = "```python\ndef add(a, b):\n    return a - b\n```"
CRITERIA = ["Mentions Rayleigh scattering", "Two sentences at most"]
JUDGE_SPEC = {"evaluator": "llm_judge", "criteria": CRITERIA}

SAMPLES = [
    # (id, prompt, output, reference, spec)
    ("add_good", "Write a Python function add(a, b) returning the sum.", GOOD_ADD, None, ADD_SPEC),
    ("add_bad", "Write a Python function add(a, b) returning the sum.", BAD_ADD, None, ADD_SPEC),
    ("capital", "What is the capital of France?", "paris", "Paris", None),
    ("capital_wrong", "What is the capital of France?", "Lyon", "Paris", None),
]


def require(module: str) -> None:
    """Skip the calling test module when a framework is not installed, except in CI (``CI=true``),
    where the adapters must be tested against the real framework: there the import fails loudly."""
    import importlib

    import pytest

    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        importlib.import_module(module)
    else:
        pytest.importorskip(module)


def pointwise_json(scores: dict[str, int]) -> str:
    """The LLM judge's pointwise reply (criteria keyed c1, c2, ... in task order)."""
    return json.dumps({"criteria": {k: {"rationale": f"because {k}", "score": v} for k, v in scores.items()}})


def refused_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def judge_config(base_url: str, **overrides):
    """An OracleConfig whose judge endpoint is ``base_url`` (fast failure, no logprobs)."""
    from oracle.config.model import OracleConfig, ProviderSettings

    settings = dict(kind="openai", base_url=base_url, model="scripted-model", timeout_s=5.0, max_retries=0,
                    backoff_base_s=0.01, backoff_max_s=0.05)
    settings.update(overrides)
    return OracleConfig(providers={"judge": ProviderSettings(**settings)}, llm_judge={"logprobs": False},
                        verifier={"timeout_s": 10})


def offline_command(script: str) -> list[str]:
    """``python -c script`` in a new network namespace with only loopback up (root and unshare);
    where that is not possible, the plain command (callers also aim every proxy at a closed port)."""
    python = [sys.executable, "-c", script]
    if shutil.which("unshare") and shutil.which("ip") and os.geteuid() == 0:
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
            return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *python]
    return python


def offline_env(home: str, root: str) -> dict[str, str]:
    """Environment for an offline child: no proxies that work, DeepEval's telemetry off."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "PYTHONPATH": root,
            "DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_DISABLE_DOTENV": "1", "NO_COLOR": "1",
            "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost"}
