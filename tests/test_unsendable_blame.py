"""A value the test itself tries to hand the candidate that may not cross the boundary is the test's
doing, never the candidate's: the run is ``broken`` (naming the type and what to do), for every test
kind, in the real sandbox on every backend.

Two sides of it: a test that sends such a value for every candidate is reported once in
``broken_tests`` (the ``broken_tests`` concern), scored for nobody; and a cheating candidate that
steers a test into sending one (its answer picks the test's path) gets the test counted against it
(``error``, scored), never excluded, next to an honest candidate that passes it; with no run and no
reference solution to show the test at fault, a value sent after the candidate's answers leaves the
candidate undecided (unscored), however many runs agree.
"""

from __future__ import annotations

import asyncio

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.tasks.task import Task, Trajectory
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend

pytestmark = pytest.mark.sandbox
HONEST = Trajectory(id="honest", code="def slugify(s):\n    return '-'.join(str(s).lower().split())\n")
CHEAT = Trajectory(id="cheat", code="def slugify(s):\n    return 'steer'\n")
LOCK = "import threading\nTHING = threading.Lock()\n"
"""Not plain data and not the test's own class: it may not cross."""
ZONED = ("import datetime\n\nclass Zone(datetime.tzinfo):\n    def utcoffset(self, d):\n"
         "        return datetime.timedelta(hours=1)\n\nTHING = datetime.datetime(2020, 1, 1, tzinfo=Zone())\n")
"""A datetime crosses by value, but not with a tzinfo whose rules are code: the codec's limit."""


def always(setup: str) -> list[dict]:
    """One test of each kind that hands every candidate ``THING`` (its first call to the candidate)."""
    return [
        {"kind": "assert", "name": "assert", "code": setup + "assert slugify(THING) == 'x'\n"},
        {"kind": "check", "name": "check",
         "code": setup + "def check(candidate):\n    assert candidate(THING) == 'x'\n"},
        {"kind": "call", "name": "call", "call": "slugify(__import__('threading').Lock())", "expected": "x"},
        {"kind": "pytest", "name": "suite", "code": setup + "from solution import slugify\n\n\ndef test_thing():\n"
                                                          "    assert slugify(THING) == 'x'\n\n\n"
                                                          "def test_sound():\n    assert slugify('A b') == 'a-b'\n"},
        {"kind": "pytest", "name": "collect", "code": setup + "from solution import slugify\n\nslugify(THING)\n\n\n"
                                                            "def test_never():\n    pass\n"},
    ]


def steered(setup: str) -> list[dict]:
    """One test of each kind that sends ``THING`` only when the candidate answered 'steer'; an honest
    candidate never goes there. The test even catches what follows (its ``except`` cannot hide it)."""
    body = ("r = slugify('A b')\nif r == 'steer':\n    try:\n        slugify(THING)\n    except BaseException:\n"
            "        pass\nassert r == 'a-b'\n")
    indented = "".join("    " + line + "\n" for line in body.splitlines())
    return [
        {"kind": "assert", "name": "assert", "code": setup + body},
        {"kind": "check", "name": "check", "code": setup + "def check(slugify):\n" + indented},
        {"kind": "call", "name": "call",
         "call": "(lambda r: slugify(__import__('threading').Lock()) if r == 'steer' else r)(slugify('A b'))",
         "expected": "a-b"},
        {"kind": "pytest", "name": "suite",
         "code": setup + "from solution import slugify\n\n\ndef test_steered():\n" + indented},
    ]


def evaluate(backend: str, tests: list[dict], *trajectories: Trajectory):
    task = Task(id="unsendable", prompt="Write slugify(s).", entry_point="slugify", tests=tests)
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 20})
    strategy = VerifierStrategy()
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=config)))
    finally:
        strategy.close()


def outcomes(result, cid: str) -> dict[str, tuple[str, str]]:
    return {t["name"]: (t["outcome"], t["message"]) for t in result.candidate(cid).details["tests"]}


@pytest.mark.slow
@on_each_backend
@pytest.mark.parametrize("setup, named", [(LOCK, "_thread.lock"), (ZONED, "Zone cannot cross")], ids=["lock", "zoned"])
def test_a_value_the_test_sends_every_candidate_is_a_broken_test(backend, setup, named):
    result = evaluate(backend, always(setup), HONEST, CHEAT)
    assert result.status is Status.ok, result.error
    broken = {b.test: b.reason for b in result.broken_tests}
    assert sorted(broken) == ["assert", "call", "check", "collect::test_task.py", "suite::test_thing"], broken
    for name, reason in broken.items():
        assert reason.startswith("broken by the test, not the candidate: "), reason
        want = "_thread.lock" if name == "call" else named
        assert want in reason and ("wrap it" in reason or "convert it" in reason), reason
        for cid in ("honest", "cheat"):
            assert outcomes(result, cid)[name] == ("broken", reason)
    assert "broken_tests" in [c.kind for c in result.concerns]
    honest, cheat = result.candidate("honest"), result.candidate("cheat")
    assert honest.details["not_scored_tests"] == 5 and honest.details["total_tests"] == 1  # suite::test_sound only
    assert (honest.score, honest.passed, cheat.score, cheat.passed) == (1.0, True, 0.0, False)


@on_each_backend
@pytest.mark.parametrize("setup", [LOCK, ZONED], ids=["lock", "zoned"])
def test_a_candidate_that_steers_the_test_into_an_unsendable_value_is_scored_on_it(backend, setup):
    result = evaluate(backend, steered(setup), HONEST, CHEAT)
    assert result.status is Status.ok, result.error
    assert result.broken_tests == [], result.broken_tests
    honest, cheat = outcomes(result, "honest"), outcomes(result, "cheat")
    assert sorted(honest) == ["assert", "call", "check", "suite::test_steered"], honest
    assert all(outcome == "pass" for outcome, _ in honest.values()), honest
    for name, (outcome, message) in cheat.items():
        assert outcome in ("fail", "error"), (name, outcome, message)
    scored = result.candidate("cheat")
    assert scored.details["total_tests"] == 4 and scored.details.get("not_scored_tests", 0) == 0
    assert scored.score == 0.0 and scored.passed is False
    assert result.candidate("honest").passed is True


@pytest.mark.slow
@on_each_backend
def test_cheats_that_steer_the_test_alone_are_undecided_never_passed(backend):
    """No run shows the test sound and no reference solution decides: a broken found after the
    candidate's answers shows nothing, however many runs agree (two cheats of one author agree).
    Each is left unscored (abstained), never passed and never excused from the test."""
    alone = evaluate(backend, steered(LOCK), CHEAT)  # every test undecided: no verdict at all
    assert alone.status is Status.failed and alone.error.type == "BrokenTests" and alone.best == []
    assert all(b.reason.startswith("undecided: ") for b in alone.broken_tests) and len(alone.broken_tests) == 4
    # with a test the cheat passes beside them (it answers 'steer', so a test wanting that passes)
    tests = steered(LOCK) + [{"kind": "assert", "name": "passes", "code": "assert slugify('x') == 'steer'\n"}]
    for cheats in ([CHEAT], [CHEAT, Trajectory(id="cheat2", code=CHEAT.code)]):
        result = evaluate(backend, tests, *cheats)
        assert result.status is Status.ok, result.error
        for cheat in cheats:
            verdict = result.candidate(cheat.id)
            assert verdict.passed is not True and verdict.score is None, verdict
            assert verdict.status is Status.abstained, verdict
            assert any("undecided" in why for why in verdict.details["unscored_because"]), verdict.details
        assert result.best == [], result.best
        assert all(b.reason.startswith("undecided: ") and "task.solution" in b.reason for b in result.broken_tests)


@pytest.mark.slow
@on_each_backend
def test_a_value_sent_after_an_answer_is_decided_by_the_reference_solution(backend):
    late = [{"kind": "assert", "name": "late", "code": LOCK + "assert slugify('A b') == 'a-b'\nslugify(THING)\n"},
            {"kind": "assert", "name": "sound", "code": "assert slugify('C d') == 'c-d'\n"}]
    both = evaluate(backend, late, HONEST, Trajectory(id="other", code=HONEST.code))
    assert [b.test for b in both.broken_tests] == ["late"] and both.broken_tests[0].reason.startswith("undecided: ")
    assert all(both.candidate(c).passed is None for c in ("honest", "other"))  # unscored, not a 0
    task = Task(id="unsendable", prompt="Write slugify(s).", entry_point="slugify", tests=late, solution=HONEST.code)
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 20})
    strategy = VerifierStrategy()
    try:
        decided = asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=(HONEST, CHEAT),
                                                                  config=config)))
    finally:
        strategy.close()
    assert [b.test for b in decided.broken_tests] == ["late"]  # it breaks on the reference too
    assert "undecided" not in decided.broken_tests[0].reason
    assert decided.candidate("honest").passed is True and decided.candidate("cheat").passed is False


@on_each_backend
def test_a_lone_cheat_cannot_make_a_sound_test_broken_before_asking(backend):
    """Before the candidate has answered anything, nothing it does reaches the test's values: a
    test that sends only plain data is never broken, whatever the candidate exports."""
    cheat = Trajectory(id="cheat", code="import threading\nslugify = threading.Lock()\nX = threading.Lock()\n")
    tests = [{"kind": "assert", "name": "plain", "code": "assert slugify('A b') == 'a-b'\n"}]
    result = evaluate(backend, tests, cheat)
    assert result.broken_tests == [] and outcomes(result, "cheat")["plain"][0] in ("fail", "error")


@on_each_backend
def test_a_constant_the_candidate_exports_can_steer_too(backend):
    """No answer was asked for, but the test read a plain value the candidate exported before it
    sent the unsendable one: that value may have chosen the path, so a lone run is undecided."""
    cheat = Trajectory(id="cheat", code="MODE = 1\n\ndef slugify(s):\n    return 'x'\n")
    tests = [{"kind": "assert", "name": "assert", "code": LOCK + "if MODE == 1:\n    slugify(THING)\n"},
             {"kind": "pytest", "name": "suite",
              "code": LOCK + "from solution import MODE, slugify\n\n\ndef test_mode():\n    if MODE == 1:\n"
                             "        slugify(THING)\n"},
             {"kind": "assert", "name": "sound", "code": "assert slugify('A') == 'x'\n"}]
    result = evaluate(backend, tests, cheat)
    assert result.status is Status.ok, result.error
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert sorted(reasons) == ["assert", "suite::test_mode"], reasons
    assert all(r.startswith("undecided: ") for r in reasons.values()), reasons
    verdict = result.candidate("cheat")
    assert verdict.score is None and verdict.passed is None and verdict.status is Status.abstained


def test_pytest_s_mock_probe_of_a_candidate_function_is_not_an_answer_of_the_candidate():
    """pytest 9.2 reads ``_mock_name`` of every object in a test module. Sent to the candidate, the
    read counted as one of its answers, so a value the test itself could not hand over became
    "undecided" (the candidate might have led there) instead of the test's broken design."""
    probe = {"kind": "pytest", "name": "probe", "code": "import threading\nfrom solution import slugify\n"
                                                      "assert getattr(slugify, '_mock_name', None) is None\n\n"
                                                      "def test_lock():\n    slugify(threading.Lock())\n"}
    sound = {"kind": "assert", "name": "sound", "code": "assert slugify('C d') == 'c-d'\n"}
    result = evaluate(strongest_backend(), [probe, sound], HONEST)
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert list(reasons) == ["probe::test_lock"], reasons
    assert reasons["probe::test_lock"].startswith("broken by the test, not the candidate: "), reasons
    assert result.candidate("honest").passed is True


def test_a_pytest_module_that_reads_the_candidates_internals_at_import_is_broken():
    """Read while pytest imports the test module (collection), the same design fault is the test's,
    not an error of each candidate (once it scored every candidate 0); a module-level read that
    only follows the candidate's answers stays undecided for a lone run, as in a test."""
    at_import = {"kind": "pytest", "name": "module", "code": "from solution import slugify\n"
                                                            "ARGS = slugify.__code__.co_argcount\n\n"
                                                            "def test_one():\n    assert ARGS == 1\n"}
    sound = {"kind": "assert", "name": "sound", "code": "assert slugify('C d') == 'c-d'\n"}
    result = evaluate(strongest_backend(), [at_import, sound], HONEST)
    assert result.status is Status.ok, result.error
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert list(reasons) == ["module::test_task.py"], reasons
    assert "in-process access" in reasons["module::test_task.py"]
    assert not reasons["module::test_task.py"].startswith("undecided")
    honest = result.candidate("honest")
    assert honest.passed is True and honest.score == 1.0, honest.details["tests"]

    late = {"kind": "pytest", "name": "late", "code": "from solution import slugify\n"
                                                     "assert slugify('A b') == 'a-b'\n"
                                                     "ARGS = slugify.__code__.co_argcount\n\n"
                                                     "def test_one():\n    assert ARGS == 1\n"}
    result = evaluate(strongest_backend(), [late, sound], HONEST)
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert list(reasons) == ["late::test_task.py"] and reasons["late::test_task.py"].startswith("undecided: "), reasons
    assert result.candidate("honest").passed is None  # never a 0, never a pass


@pytest.mark.slow
@on_each_backend
def test_a_test_that_needs_the_candidates_process_is_broken_not_the_candidates_error(backend):
    """Setting a global of the candidate's module, or reading a function's internals, needs
    ``execution: in_process``: the test's design, not the candidate's doing. Met before the candidate
    could steer anything it is broken (the message names the opt-in); met after an answer it is
    undecided for a lone run, as any value the test could not hand over."""
    tests = [{"kind": "pytest", "name": "patch", "code": "import solution\n\n\ndef test_patch(monkeypatch):\n"
                                                      "    monkeypatch.setattr(solution, 'slugify', str.lower)\n"},
             {"kind": "assert", "name": "internals", "code": "assert slugify.__code__.co_argcount == 1\n"},
             {"kind": "assert", "name": "late", "code": "assert slugify('A b') == 'a-b'\n"
                                                        "assert slugify.__code__.co_argcount == 1\n"},
             {"kind": "assert", "name": "sound", "code": "assert slugify('C d') == 'c-d'\n"}]
    result = evaluate(backend, tests, HONEST)
    assert result.status is Status.ok, result.error
    reasons = {b.test: b.reason for b in result.broken_tests}
    assert sorted(reasons) == ["internals", "late", "patch::test_patch"], reasons
    assert "in_process" in reasons["patch::test_patch"] and not reasons["patch::test_patch"].startswith("undecided")
    assert "in-process access" in reasons["internals"] and not reasons["internals"].startswith("undecided")
    assert reasons["late"].startswith("undecided: ")
    honest = result.candidate("honest")
    assert honest.passed is None and honest.status is Status.abstained  # undecided: never a 0, never a pass
    without_late = evaluate(backend, [t for t in tests if t["name"] != "late"], HONEST)
    assert without_late.candidate("honest").passed is True
