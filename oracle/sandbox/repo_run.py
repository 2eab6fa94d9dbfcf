"""Run a repository's own tests over a candidate's working tree in the sandbox, with outcomes the
candidate cannot forge by the known tricks.

The candidate's code shares the test process (the repository's tests import it), so every result
says ``integrity: shared_process``. The defences here (the tree and its protected files are the
caller's, see oracle/repo/):

- outcomes come only from an authenticated report pipe the test process took before any candidate
  code ran (``runtime/repo_boot.py``, ``runtime/repo_report.py``), never from stdout or a file in
  the tree; a frame that fails its HMAC makes the report untrusted;
- each outcome is checked beneath pytest's hooks (the runner's own ``CallInfo``): a hook that
  rewrites a failure to passed, or reports a test that never ran, is caught;
- the cross-check: the report must say the session finished, with an exit status equal to the
  process's, and that status must agree with the outcomes; a run that ends without reporting every
  required node id as run (an early ``os._exit(0)``, a crash, a killed parent, a deselecting hook)
  has a ``problem`` and is never a pass; a required test skipped, xfailed or deselected is not passed.

A custom ``command`` (not pytest) is judged from the JUnit XML it writes (``report_source="junit"``):
weaker evidence, since the candidate's process writes that file; the file must not exist before
the run (any planted one is removed), must be written by it, and must agree with the exit status.

What the candidate still could do, stated plainly: code in the test process can read the process's
memory, so it can find the plugin and its key and send frames of its choosing. No known trick does
this; the after-run check of the protected files and the tampering concerns are the caller's.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from oracle.sandbox import junit
from oracle.sandbox.pinned_pytest import PytestSource
from oracle.sandbox.pinned_pytest import source as pytest_source
from oracle.sandbox.report_reader import Frames, ReportPipe
from oracle.sandbox.runner import RunOutcome, RunRequest, Sandbox

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "deselected", "not_run"]
_RUNTIME = Path(__file__).parent / "runtime"
_RUNTIME_FILES = ("repo_boot.py", "repo_report.py", "repo_build.py")
TAIL = 4000
_EXIT_WORDS = {2: "interrupted", 3: "internal error", 4: "usage error (a node id not found?)",
               5: "no tests collected"}


@dataclass(frozen=True)
class NodeOutcome:
    outcome: Outcome
    message: str = ""
    duration_ms: float = 0.0


@dataclass(frozen=True)
class RepoRun:
    """One run of a tree's tests. ``problem`` set: the report cannot be trusted (never a pass)."""

    outcomes: dict[str, NodeOutcome]
    exit_code: int | None
    report_complete: bool
    """Every required node id has an outcome from the report, and nothing in it is in doubt."""
    problem: str | None
    stdout_tail: str
    stderr_tail: str = ""
    integrity: Literal["shared_process"] = "shared_process"
    report_source: Literal["plugin", "junit"] = "plugin"
    """``plugin``: our authenticated pytest report; ``junit``: a file the candidate's process wrote."""
    build_error: str | None = None
    """The editable install failed (the candidate's failure, not a problem): the build's output tail."""
    build_seconds: float | None = None
    timed_out: bool = False
    signal: int | None = None
    duration_ms: float = 0.0
    backend: str = ""
    pytest_version: str | None = None
    details: dict = field(default_factory=dict)


def _check_args(node_ids: list[str], pythonpath: list[str], install: str, command: list[str] | None,
                junit_xml: str | None) -> list[str] | None:
    """Validated; returns the extra pytest args when ``command`` is pytest itself, else None."""
    if not node_ids:
        raise ValueError("node_ids: at least one node id is required")
    if len(set(node_ids)) != len(node_ids):
        raise ValueError("node_ids: duplicates")
    for n in node_ids:
        if not n.strip() or any(c in n for c in "\0\n\r"):
            raise ValueError(f"node_ids: {n!r} is not a node id")
    if install not in ("pythonpath", "editable"):
        raise ValueError(f"install: {install!r} is not 'pythonpath' or 'editable'")
    for p in pythonpath:
        if p.startswith("/") or ".." in p.split("/"):
            raise ValueError(f"pythonpath: {p!r} must be relative to the repository root, without '..'")
    if command is None:
        return []
    if not command:
        raise ValueError("command: empty")
    base = os.path.basename(command[0])
    if base in ("pytest", "py.test"):
        extra = command[1:]
    elif base.startswith("python") and command[1:3] == ["-m", "pytest"]:
        extra = command[3:]
    else:
        if not junit_xml:
            raise ValueError("junit_xml: required when command is not pytest (the report the command writes)")
        return None
    return list(extra)


async def run_repo_tests(sandbox: Sandbox, tree: Path, *, node_ids: list[str], command: list[str] | None,
                         junit_xml: str | None, python: str, env_mounts=(), sys_path=(),
                         pythonpath: list[str] | tuple[str, ...] = (".",), install: str = "pythonpath",
                         pytest: PytestSource | None = None, timeout_s: float = 300.0,
                         build_timeout_s: float = 300.0, subdir: str | None = None) -> RepoRun:
    """Run ``node_ids`` of the tree at ``tree`` (bound at /repo, read-write, for this run only).

    ``subdir``: where the tests run (cwd, rootdir; node ids, ``junit_xml`` and an editable build are
    relative to it); ``pythonpath`` stays relative to the tree's root.

    Raises ValueError for bad arguments (naming the argument) and SandboxError when the sandbox
    cannot start; anything the candidate does is in the returned RepoRun.
    """
    pythonpath = list(pythonpath) or ["."]
    pytest_args = _check_args(list(node_ids), pythonpath, install, command, junit_xml)
    sub = _check_subdir(subdir)
    if sub and not _real_dir(Path(tree), sub):
        return RepoRun(outcomes={n: NodeOutcome("error", f"{sub} is not a directory of the tree") for n in node_ids},
                       exit_code=None, report_complete=False, stdout_tail="", backend=sandbox.backend,
                       problem=f"subdir: {sub} is not a directory of the candidate's tree (or is a link)")
    mode = "command" if pytest_args is None else "pytest"
    ro = list(env_mounts)
    settings: dict = {"mode": mode, "sys_path": list(sys_path), "pythonpath": pythonpath, "install": install,
                      "build_timeout_s": build_timeout_s, "subdir": sub}
    if mode == "pytest":
        src = pytest or pytest_source(python, list(sys_path), list(env_mounts))
        if src.path:
            ro.append(src.path)
        files = list(dict.fromkeys(n.split("::")[0] for n in node_ids))  # the plugin selects the node ids
        settings.update(pytest_path=src.path, plugin_autoload=src.plugin_autoload, select=list(node_ids),
                        args=["-p", "no:cacheprovider", "--rootdir", "{run_dir}", "--continue-on-collection-errors",
                              *(pytest_args or []), "--", *files])
    else:
        junit.remove_stale(str(tree), _join(sub, junit_xml))  # type: ignore[arg-type]  # checked in _check_args
        settings["command"] = list(command or [])
    runtime: dict[str, str | bytes] = {name: (_RUNTIME / name).read_text() for name in _RUNTIME_FILES}
    pipe = ReportPipe()
    settings.update(key=pipe.key.hex(), fd=pipe.write_fd)
    started = time.time()
    try:
        repo_in_sandbox = "/repo" if sandbox.isolation_level == "namespaces" else os.path.realpath(tree)
        if mode == "pytest":
            run_dir = repo_in_sandbox + (f"/{sub}" if sub else "")
            settings["args"] = [a.replace("{run_dir}", run_dir) for a in settings["args"]]
        request = RunRequest(command=[python, "-I", "{src}/repo_boot.py", "{src}", "{work}", "{repo}"],
                             files=runtime, stdin=json.dumps(settings).encode(), tree=str(tree),
                             ro_paths=tuple(sorted(set(ro))), pass_fds=(pipe.write_fd,),
                             timeout_s=timeout_s + (build_timeout_s if install == "editable" else 0.0))
        outcome = await sandbox.run(request)
    finally:
        frames = pipe.finish()
    if mode == "pytest":
        return _judge_pytest(frames, outcome, list(node_ids), sandbox.backend)
    return _judge_junit(frames, outcome, list(node_ids), str(tree), _join(sub, junit_xml or ""), started,
                        sandbox.backend)


def _check_subdir(subdir: str | None) -> str:
    if subdir is None or subdir.strip("/") in ("", "."):
        return ""
    parts = subdir.strip("/").split("/")
    if subdir.startswith("/") or any(p in ("", ".", "..") for p in parts) or any(c in subdir for c in "\0\n\r"):
        raise ValueError(f"subdir: {subdir!r} must be a plain relative path inside the repository")
    return "/".join(parts)


def _real_dir(tree: Path, sub: str) -> bool:
    """``sub`` is a directory of ``tree`` with no link on the way (looked at without following any)."""
    path = tree
    for part in sub.split("/"):
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    return True


def _join(sub: str, rel: str) -> str:
    return f"{sub}/{rel}" if sub else rel


def _tail(data: bytes) -> str:
    return data.decode("utf-8", "replace")[-TAIL:]


def _base(outcome: RunOutcome, backend: str) -> dict:
    return {"exit_code": outcome.exit_code, "stdout_tail": _tail(outcome.stdout), "stderr_tail": _tail(outcome.stderr),
            "timed_out": outcome.timed_out, "signal": outcome.signal, "duration_ms": round(outcome.duration_ms, 3),
            "backend": backend}


def _ended(outcome: RunOutcome) -> str:
    if outcome.timed_out:
        return "it timed out"
    if outcome.output_truncated:
        return "its output passed the sandbox's cap and it was killed"
    if outcome.memory_limit_hit:
        return "it hit the memory limit and was killed"
    if outcome.signal is not None:
        return f"killed by signal {outcome.signal}"
    return f"exit status {outcome.exit_code}"


def _build_failed(frames: Frames, outcome: RunOutcome, node_ids: list[str], backend: str,
                  source: Literal["plugin", "junit"]) -> RepoRun | None:
    build = next((f for f in frames.frames if f.get("op") == "build"), None)
    if build is None or build.get("ok") or frames.tampered:
        return None
    tail = str(build.get("tail", ""))
    last = " | ".join(tail.strip().splitlines()[-3:])
    return RepoRun(outcomes={n: NodeOutcome("error", f"the editable install failed: {last}"[:2000]) for n in node_ids},
                   report_complete=False, problem=None, build_error=tail, report_source=source,
                   build_seconds=build.get("seconds"), **_base(outcome, backend))


def _distrust(outcomes: dict[str, NodeOutcome], why: str) -> dict[str, NodeOutcome]:
    """Nothing an untrusted report calls passed stays passed."""
    return {n: o if o.outcome != "passed" else NodeOutcome("error", f"not trusted: {why}", o.duration_ms)
            for n, o in outcomes.items()}


_SEVERITY = ("error", "failed", "xpassed", "skipped", "xfailed")


def _covering(cases: dict[str, dict], node_id: str) -> dict | None:
    """The outcome of a node id that names several items (a function's parametrizations, a class):
    passed only when all passed, else the most severe of theirs."""
    items = [c for k, c in cases.items() if k.startswith((node_id + "[", node_id + "::"))]
    if not items:
        return None
    for word in _SEVERITY:
        worst = next((c for c in items if c.get("outcome") == word), None)
        if worst is not None:
            return {**worst, "message": f"{worst.get('node_id')}: {worst.get('message', '')}"}
    return {"outcome": "passed", "message": "", "duration_ms": sum(float(c.get("duration_ms", 0.0)) for c in items)}


def _judge_pytest(frames: Frames, outcome: RunOutcome, node_ids: list[str], backend: str) -> RepoRun:
    failed_build = _build_failed(frames, outcome, node_ids, backend, "plugin")
    if failed_build is not None:
        return failed_build
    ops: dict[str, list[dict]] = {}
    for f in frames.frames:
        ops.setdefault(f["op"], []).append(f)
    cases = {str(f.get("node_id")): f for f in ops.get("case", [])}
    deselected = {str(n) for f in ops.get("deselected", []) for n in f.get("node_ids", [])}
    collect_errors = [(str(f.get("node_id", "")), str(f.get("message", ""))) for f in ops.get("collect_error", [])]
    finish = ops.get("finish", [None])[-1]
    exit_frame = ops.get("exit", [None])[-1]
    problems: list[str] = []
    if outcome.timed_out:
        problems.append(f"the run timed out ({_ended(outcome)})")
    if frames.tampered:
        problems.append(f"the report channel was tampered with: {frames.tampered}")
    elif not ops.get("configured"):
        problems.append(f"the test process ended before pytest started ({_ended(outcome)}): no report")
    elif finish is None:
        problems.append(f"the test process ended before pytest finished the session ({_ended(outcome)}): "
                        "an early exit or a crash")
    elif exit_frame is None:
        problems.append(f"the test process ended after the session without reporting pytest's exit status "
                        f"({_ended(outcome)})")
    else:
        reported, status = int(exit_frame.get("code", -1)), int(finish.get("exitstatus", -1))
        if outcome.exit_code != reported or status != reported:
            problems.append(f"the exit status disagrees with the report: pytest's session ended with {status}, "
                            f"pytest returned {reported}, the process {_ended(outcome)}")
        elif reported not in (0, 1):
            text = (outcome.stdout + b"\n" + outcome.stderr).decode("utf-8", "replace")
            said = [ln.strip() for ln in text.splitlines() if ln.startswith(("ERROR:", "INTERNALERROR>", "E   "))][-3:]
            problems.append(f"pytest ended with exit status {reported} ({_EXIT_WORDS.get(reported, 'unknown')})"
                            + (f": {' | '.join(said)}"[:600] if said else ""))
        bad = [n for n, c in cases.items() if c.get("outcome") in ("failed", "error")] + [n for n, _ in collect_errors]
        if reported == 0 and bad:
            problems.append(f"pytest exited 0 but reported failures ({', '.join(bad[:5])})")
        if reported == 1 and not bad:
            problems.append("pytest exited 1 (tests failed) but reported no failure")
    rewritten = [n for n, c in cases.items()
                 if str(c.get("message", "")).startswith(("outcome rewritten", "a call phase"))]
    if rewritten:
        problems.append(f"a hook rewrote or fabricated outcomes: {', '.join(rewritten[:5])}")
    outcomes: dict[str, NodeOutcome] = {}
    for n in node_ids:
        c = cases.get(n) or _covering(cases, n)
        if c is not None:
            outcomes[n] = NodeOutcome(c.get("outcome", "error"), str(c.get("message", "")),  # type: ignore[arg-type]
                                      float(c.get("duration_ms", 0.0)))
        elif n in deselected:
            outcomes[n] = NodeOutcome("deselected", "deselected by a hook or option")
        else:
            err = next((m for p, m in collect_errors if p and (n == p or n.startswith(p + "::"))), None)
            outcomes[n] = NodeOutcome("error", f"collecting failed: {err}") if err is not None \
                else NodeOutcome("not_run", "not reported as run")
    missing = [n for n, o in outcomes.items() if o.outcome in ("not_run", "deselected")]
    if missing and not problems:
        problems.append(f"required tests were not run: {', '.join(missing[:5])}"
                        + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    if problems:
        outcomes = _distrust(outcomes, problems[0])
    complete = not problems and all(n in cases or _covering(cases, n) for n in node_ids)
    version = (ops.get("configured") or [{}])[0].get("pytest_version")
    return RepoRun(outcomes=outcomes, report_complete=complete, problem="; ".join(problems) or None,
                   report_source="plugin", pytest_version=version,
                   build_seconds=(ops.get("build") or [{}])[0].get("seconds"),
                   details={"collected": len((ops.get("collected") or [{}])[-1].get("node_ids", [])),
                            "deselected": sorted(deselected)[:20]},
                   **_base(outcome, backend))


def _judge_junit(frames: Frames, outcome: RunOutcome, node_ids: list[str], tree: str, rel: str,
                 started: float, backend: str) -> RepoRun:
    failed_build = _build_failed(frames, outcome, node_ids, backend, "junit")
    if failed_build is not None:
        return failed_build
    problems: list[str] = []
    cases: dict = {}
    if outcome.timed_out:
        problems.append(f"the run timed out ({_ended(outcome)})")
    if frames.tampered:
        problems.append(f"the report channel was tampered with: {frames.tampered}")
    elif not any(f["op"] == "exec" for f in frames.frames):
        problems.append(f"the run ended before the command started ({_ended(outcome)})")
    if not problems:
        try:
            data = junit.read_report(tree, rel)
            mtime = os.stat(os.path.join(tree, rel), follow_symlinks=False).st_mtime
            if mtime + 1 < started:
                raise junit.JUnitError(f"junit_xml: {rel} is older than the run")
            cases = junit.parse(data)
        except junit.JUnitError as exc:
            problems.append(str(exc))
    outcomes: dict[str, NodeOutcome] = {}
    for n in node_ids:
        found = junit.outcome_of(cases, n)
        if found is None:
            outcomes[n] = NodeOutcome("not_run", "not in the report")
        else:
            outcomes[n] = NodeOutcome(cast(Outcome, found[0]), found[1], found[2])
    if not problems:
        bad = any(o in ("failed", "error") for entries in cases.values() for o, _, _ in entries)
        if outcome.exit_code == 0 and bad:
            problems.append("the command exited 0 but its report has failures")
        elif outcome.exit_code != 0 and not bad:
            problems.append(f"the command's report has no failure but it ended with {_ended(outcome)}")
        missing = [n for n, o in outcomes.items() if o.outcome == "not_run"]
        if missing:
            problems.append(f"required tests are not in the report: {', '.join(missing[:5])}")
    if problems:
        outcomes = _distrust(outcomes, problems[0])
    return RepoRun(outcomes=outcomes, report_complete=not problems, problem="; ".join(problems) or None,
                   report_source="junit", details={"command_report": rel}, **_base(outcome, backend))


def describe(run: RepoRun) -> str:
    """One line for logs: the counts by outcome and the problem, if any."""
    counts: dict[str, int] = {}
    for o in run.outcomes.values():
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    return f"{shlex.quote(run.backend)} {counts} problem={run.problem!r}"
