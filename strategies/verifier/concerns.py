"""What a verifier result may need a person for, as typed concerns (oracle/results/concerns.py):
a failed run (the sandbox's or the task's fault), tests that are the task's fault (broken), code that
ran below the strongest isolation or inside the candidate's process, a run that changed its worker,
a repository candidate that changed protected files, candidates a fault of ours left unscored, no
candidate passing."""

from __future__ import annotations

from typing import Literal

from oracle.results.concerns import (BrokenTests, BrokenTestsEvidence, Concern, ErrorEvidence, IsolationEvidence,
                                     NoCandidatePassed, NonePassedEvidence, ProtectedFileChange, SandboxFailure,
                                     Tampering, TamperingEvidence, WeakIsolation, verifier_failure)
from oracle.results.provenance import ISOLATION_ORDER
from oracle.results.result import EvaluationResult, Status


def concerns(result: EvaluationResult, ids: list[str]) -> list[Concern]:
    """What may need a human: a failed run (the sandbox's or the task's fault), code that ran below
    the strongest isolation or inside the candidate's process, no candidate passing."""
    broken_tests = _broken_concern(result, ids)
    if result.status == Status.failed:
        error = result.error
        if error is not None and error.type == "BrokenTests" and broken_tests:
            return broken_tests
        return [verifier_failure(error.type if error else "EvaluationFailed",
                                 error.message if error else "unknown error", ids)] + broken_tests
    out: list[Concern] = list(broken_tests)
    run = result.provenance.execution
    if run is not None and run.code_run and run.integrity is not None and (
            run.integrity == "in_process" or run.isolation_level != ISOLATION_ORDER[-1]):
        out.append(WeakIsolation(
            candidates=ids, evidence=IsolationEvidence(integrity=run.integrity, isolation_level=run.isolation_level),
            message=f"tests ran with integrity {run.integrity} under {run.isolation_level} isolation"))
    tampered = {c.id: [f"{t['name']}: {x}" for t in c.details.get("tests", []) for x in t.get("tampering", [])]
                for c in result.candidates}
    tampered = {cid: changes for cid, changes in tampered.items() if changes}
    if tampered:
        out.append(Tampering(candidates=list(tampered), evidence=TamperingEvidence(changes=tampered),
                             message="a candidate's run changed the sandbox worker it ran in: "
                                     + "; ".join(f"{cid}: {changes[0]}" for cid, changes in tampered.items())))
    out.extend(_protected_concern(result))
    out.extend(_unscored_concerns(result))
    scored = [c for c in result.candidates if c.status != Status.failed]
    if scored and not any(c.passed for c in scored):
        firsts = {c.id: str(c.details.get("first_failure") or c.details.get("message") or "failed")
                  for c in scored}
        mode: Literal["tests", "reference"] = "reference" if run is not None and run.integrity == "reference" \
            else "tests"
        out.append(NoCandidatePassed(
            candidates=[c.id for c in scored], evidence=NonePassedEvidence(mode=mode, first_failures=firsts),
            message="no candidate passed: " + "; ".join(f"{cid}: {m}" for cid, m in firsts.items())))
    return out


def _broken_concern(result: EvaluationResult, ids: list[str]) -> list[Concern]:
    """Tests that are the task's fault (broken.py): scored for nobody, said once."""
    if not result.broken_tests:
        return []
    tests = {b.test: b.reason for b in result.broken_tests}
    scored = int(result.details.get("scored_tests", 0)) if result.status == Status.ok else 0
    return [BrokenTests(candidates=ids, evidence=BrokenTestsEvidence(tests=tests, scored=scored),
                        message=f"{len(tests)} broken test(s), the task's fault, scored for no candidate: "
                                + "; ".join(f"{name}: {why}" for name, why in list(tests.items())[:3]))]


def _protected_concern(result: EvaluationResult) -> list[Concern]:
    """Repository candidates that changed protected files (repo_tests.py): one concern naming
    every file, and whether it was restored or failed the candidate."""
    files = {c.id: [ProtectedFileChange.model_validate(x) for x in c.details.get("protected_changes", [])]
             for c in result.candidates}
    files = {cid: changes for cid, changes in files.items() if changes}
    if not files:
        return []
    said = "; ".join(f"{cid}: " + ", ".join(f"{x.path} ({x.category}, {x.change}, {x.action})" for x in changes[:3])
                     for cid, changes in files.items())
    return [Tampering(candidates=list(files), evidence=TamperingEvidence(files=files),
                      message=f"candidates changed protected files of the repository: {said}")]


def _unscored_concerns(result: EvaluationResult) -> list[Concern]:
    """The candidates a fault of ours left unscored while the others were judged: a sandbox failure
    on some of their runs (``sandbox_failure``), or a language this machine lacks (``task_unrunnable``)."""
    out: list[Concern] = []
    sandbox: dict[str, list[str]] = result.details.get("sandbox_failures") or {}
    if sandbox:
        first = next(iter(sandbox.values()))[0]
        out.append(SandboxFailure(
            candidates=list(sandbox), evidence=ErrorEvidence(type="SandboxError", message=first),
            message=f"the sandbox failed on runs of {', '.join(sandbox)} (left unscored; the others were "
                    f"judged): {first}"))
    unrunnable: dict[str, str] = result.details.get("unrunnable_here") or {}
    if unrunnable:
        out.append(verifier_failure("UnsupportedLanguage", next(iter(unrunnable.values())), list(unrunnable)))
    return out
