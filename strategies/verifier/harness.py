"""Turn one (candidate code, test) pair into a sandbox run, and the run's outcome into a verdict.

Outcomes: ``pass``; ``fail`` (the test ran and said no: assertion, wrong value, wrong output);
``error`` (the candidate crashed, could not load, exceeded memory or output, or exited early);
``timeout`` (wall clock). When the harness never reported ``started``, the sandbox itself failed:
that raises ``SandboxError`` (our fault), it is never scored against the candidate.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from dataclasses import dataclass
from typing import Any

from oracle.errors import SandboxError
from oracle.testspec import AssertTest, CallTest, CheckTest, IoTest
from strategies.verifier._templates import JAVASCRIPT_HARNESS, PYTHON_HARNESS
from strategies.verifier.sandbox import RunOutcome, RunRequest

Test = AssertTest | CallTest | CheckTest | IoTest
_MARKER = re.compile(rb"@@ORACLE (\S+) (\{.*\})\s*$", re.MULTILINE)


@dataclass(frozen=True)
class TestOutcome:
    """The verdict of one test on one candidate."""

    name: str
    kind: str
    outcome: str
    message: str
    duration_ms: float
    weight: float

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "outcome": self.outcome, "message": self.message,
                "duration_ms": round(self.duration_ms, 1), "weight": self.weight}


def test_name(test: Test, index: int) -> str:
    return test.name or f"{test.kind}[{index}]"


def build_request(test: Test, code: str, *, language: str, interpreter: str, entry_point: str | None,
                  timeout_s: float) -> tuple[RunRequest, str]:
    """The run for one test, and the nonce its harness will report with."""
    nonce = secrets.token_hex(16)
    spec: dict[str, Any] = {"kind": test.kind, "entry_point": entry_point}
    if isinstance(test, (AssertTest, CheckTest)):
        spec["code"] = test.code
    elif isinstance(test, CallTest):
        spec["call"] = test.call
    stdin = nonce.encode() + b"\n" + (test.stdin.encode() if isinstance(test, IoTest) else b"")
    if language == "python":
        files = {"harness.py": PYTHON_HARNESS, "candidate.py": code, "spec.json": json.dumps(spec)}
        command = [interpreter, "-I", "{src}/harness.py"]
    else:
        files = {"harness.js": JAVASCRIPT_HARNESS, "candidate.js": code, "spec.json": json.dumps(spec)}
        command = [interpreter, "{src}/harness.js"]
    return RunRequest(command=command, files=files, stdin=stdin, timeout_s=timeout_s,
                      address_limit=language == "python"), nonce


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def values_equal(got: Any, expected: Any, tolerance: float) -> bool:
    """Structural equality; floats (and int vs float) within an absolute ``tolerance``."""
    if isinstance(got, bool) or isinstance(expected, bool):
        return got is expected or (type(got) is bool and type(expected) is bool and got == expected)
    if isinstance(got, (int, float)) and isinstance(expected, (int, float)):
        if isinstance(got, int) and isinstance(expected, int):
            return got == expected
        return math.isclose(float(got), float(expected), rel_tol=0.0, abs_tol=tolerance) or got == expected
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(values_equal(g, e, tolerance) for g, e in zip(got, expected))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(values_equal(got[k], expected[k], tolerance) for k in got)
    return got == expected


def compare_stdout(got: str, expected: str, rule: str) -> bool:
    """The whitespace rules of an io test (see oracle.testspec.IoTest.whitespace)."""
    if rule == "exact":
        return got == expected
    if rule == "collapse":
        return " ".join(got.split()) == " ".join(expected.split())
    norm = lambda s: "\n".join(line.rstrip() for line in s.replace("\r\n", "\n").split("\n")).rstrip("\n")  # noqa: E731
    return norm(got) == norm(expected)


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def interpret(test: Test, index: int, run: RunOutcome, nonce: str, *, tolerance: float,
              memory_mb: int) -> TestOutcome:
    """Read the verdict of one run (see module docstring for the outcome rules)."""
    name, kind, weight = test_name(test, index), test.kind, test.weight
    records = [json.loads(m.group(2)) for m in _MARKER.finditer(run.stderr) if m.group(1).decode() == nonce]
    started = any(r.get("kind") == "started" for r in records)
    verdicts = [r for r in records if r.get("kind") != "started"]
    stderr_text = _MARKER.sub(b"", run.stderr).decode(errors="replace")

    def out(outcome: str, message: str) -> TestOutcome:
        return TestOutcome(name, kind, outcome, message, run.duration_ms, weight)

    if run.timed_out:
        return out("timeout", f"no result within {test.timeout_s or 'the default'} s limit"
                   if test.timeout_s else "no result within the time limit")
    if not started:
        if run.memory_limit_hit or run.output_truncated:
            return out("error", "killed by the sandbox limits before the harness started")
        raise SandboxError(f"{run.backend}: the harness never started (exit {run.exit_code}, "
                           f"signal {run.signal}): {_short(stderr_text, 400) or 'no output'}")
    if run.output_truncated:
        return out("error", "output limit exceeded (the run was stopped)")
    if not verdicts:
        if run.memory_limit_hit or run.signal == 9:
            return out("error", f"killed: memory limit ({memory_mb} MiB) exceeded" if run.memory_limit_hit
                       else "killed by SIGKILL (a sandbox limit)")
        last = stderr_text.strip().splitlines()[-1:] or [""]
        what = f"signal {run.signal}" if run.signal else f"exit code {run.exit_code}"
        return out("error", _short(f"the program ended ({what}) before the test finished"
                                   + (f": {last[0]}" if last[0] else "")))
    verdict = verdicts[-1]
    vkind = verdict.get("kind")
    message = str(verdict.get("message", ""))
    if vkind in ("pass", "fail", "error"):
        if vkind == "error" and run.memory_limit_hit:
            message = f"memory limit ({memory_mb} MiB) exceeded: {message}"
        return out(vkind, _short(message) if message else ("all assertions held" if vkind == "pass" else vkind))
    if vkind == "value" and isinstance(test, CallTest):
        got = _plain(verdict.get("value"))
        tol = test.tolerance if test.tolerance is not None else tolerance
        if values_equal(got, _plain(test.expected), tol):
            return out("pass", f"{test.call} == {json.dumps(test.expected)[:80]}")
        return out("fail", _short(f"{test.call}: expected {json.dumps(test.expected)[:90]}, "
                                  f"got {json.dumps(got, default=repr)[:90]}"))
    if vkind == "done" and isinstance(test, IoTest):
        got = run.stdout.decode(errors="replace")
        if compare_stdout(got, test.stdout, test.whitespace):
            return out("pass", f"stdout matches ({test.whitespace})")
        return out("fail", _short(f"stdout differs ({test.whitespace}): expected {test.stdout[:80]!r}, "
                                  f"got {got[:80]!r}"))
    raise SandboxError(f"harness protocol error: unexpected verdict {vkind!r} for a {kind} test")
