"""One candidate never fails the task (verifier): hostile candidate values go through every
comparator and every trajectory check beside honest candidates, whose verdicts must not move.

Breadth (Hypothesis) drives the real strategy: data checks and reference checks need no sandbox;
call tests get their value from a synthetic ``RunResult`` (the run itself is replaced, the
comparison, containment and scoring are the real ones). A few end-to-end runs in the real sandbox
check the same with real candidate processes, and a sandbox failure on one candidate's run only.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oracle.config.model import OracleConfig
from oracle.errors import SandboxError
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Step, Task, Trajectory
from oracle.strategies.verifier import strategy as verifier_module
from oracle.strategies.verifier.harness import values_equal
from oracle.sandbox.runs import RunResult
from oracle.sandbox.runtime import wire
from oracle.strategies.verifier.strategy import VerifierStrategy
from tests.profiles import examples

STRATEGY = VerifierStrategy()
CONFIG = OracleConfig(verifier={"timeout_s": 5})
HYPOTHESIS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])


def evaluate(task: Task, *trajectories: Trajectory, config: OracleConfig = CONFIG):
    return asyncio.run(STRATEGY.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=config)))


def verdicts(result, cid: str) -> tuple:
    """What an honest candidate's verdict is: outcome and message of every test, score, pass."""
    c = result.candidate(cid)
    tests = tuple((t["name"], t["outcome"], t["message"]) for t in c.details.get("tests", []))
    return tests, c.score, c.passed, c.status, c.details.get("message")


def deep(n: int) -> Any:
    value: Any = 0
    for _ in range(n):
        value = [value]
    return value


class Weird:
    """An object no comparator expects: equality, hashing and ``str`` raise (``repr`` works, for
    Hypothesis to report an example)."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality for you")

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        raise RuntimeError("no str either")

    def __repr__(self) -> str:
        return "Weird()"


HOSTILE_SCALARS = st.one_of(
    st.integers(), st.integers(min_value=10 ** 300, max_value=10 ** 310), st.sampled_from([10 ** 5000, -(10 ** 5000)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]),
    st.text(max_size=20), st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u202e", "-\u2212\uff11", "٣"]),
    st.binary(max_size=8), st.booleans(), st.none(), st.complex_numbers(allow_nan=True, allow_infinity=True))
HOSTILE = st.one_of(
    st.recursive(HOSTILE_SCALARS, lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=4), inner, max_size=3) | st.tuples(inner, inner), max_leaves=8),
    st.integers(min_value=50, max_value=3000).map(deep))
ODD = st.one_of(HOSTILE, st.builds(Weird), st.builds(object), st.sets(st.integers(), max_size=3),
                st.builds(lambda: {"nested": [Weird()]}))


# ---------------------------------------------------------------- call tests (synthetic runs)

CALL_EXPECTED: list[Any] = [3, 2.5, "text", [1, [2, 3]], {"a": 1.5, "b": [True, None]}, True, None, 10 ** 20, -0.0]
CALL_TASK = Task(id="calls", prompt="", entry_point="f", tests=[
    {"kind": "call", "call": f"f({i})", "expected": e, "name": f"call{i}"} for i, e in enumerate(CALL_EXPECTED)])


def _synthetic(values: dict[str, list[Any]]):
    """A stand-in for the sandbox run: the candidate's code names which values its calls return."""
    def run(pool: Any, plan: Any) -> RunResult:
        returned = values[plan.candidate_spec["code"]]
        index = int(plan.test_spec["call"][2:-1])
        value = returned[index]
        if isinstance(value, dict) and "__raw__" in value:  # a report that is not valid wire data
            return RunResult(verdict={"outcome": "value", "value": value["__raw__"]}, duration_ms=1.0)
        return RunResult(verdict={"outcome": "value", "value": wire.encode(value)}, duration_ms=1.0)
    return run


def _wire_value(value: Any) -> Any:
    try:
        wire.encode(value)
        return value
    except (wire.NotPlain, RecursionError, ValueError):
        return {"__raw__": value if not isinstance(value, (bytes, complex, tuple)) else repr(value)}


@HYPOTHESIS
@given(hostile=st.lists(st.one_of(HOSTILE_SCALARS, HOSTILE), min_size=len(CALL_EXPECTED), max_size=len(CALL_EXPECTED)))
@example(hostile=[10 ** 310] * len(CALL_EXPECTED))
@example(hostile=[10 ** 5000, math.nan, "\ud800", deep(3000), {"a": math.inf}, b"x", None, -(10 ** 5000), 1j])
def test_hostile_call_values_never_move_honest_verdicts(monkeypatch, hostile):
    hostile = [_wire_value(v) for v in hostile]
    values = {"honest": list(CALL_EXPECTED), "wrong": ["wrong"] * len(CALL_EXPECTED), "hostile": hostile}
    monkeypatch.setattr(verifier_module, "run_in_pool", _synthetic(values))
    honest = [Trajectory(id="honest", code="honest"), Trajectory(id="wrong", code="wrong")]
    baseline = evaluate(CALL_TASK, *honest)
    mixed = evaluate(CALL_TASK, honest[0], Trajectory(id="hostile", code="hostile"), honest[1])
    assert mixed.status is Status.ok, mixed.error
    for cid in ("honest", "wrong"):
        assert verdicts(mixed, cid) == verdicts(baseline, cid)
    assert mixed.candidate("honest").passed is True and "honest" in mixed.best
    for test, value, expected in zip(mixed.candidate("hostile").details["tests"], hostile, CALL_EXPECTED):
        assert test["outcome"] in ("pass", "fail", "error")
        if test["outcome"] == "pass":  # only ever a value the comparison itself calls equal
            assert not (isinstance(value, dict) and "__raw__" in value)
            assert values_equal(value, expected, CONFIG.verifier.float_tolerance)


# ---------------------------------------------------------------- trajectory checks (host-side)

CALLS = [("search", {"query": "refund policy", "limit": 5}), ("refund", {"order": "A-17", "amount": 12.5})]
RESULTS = ['{"status": "refunded", "amount": 12.5}', "Policy: refunds within 30 days."]


def _tool_calls_tests() -> list[dict]:
    expected = [{"tool": t, "args": a} for t, a in CALLS]
    tests: list[dict] = []
    for match, ordered in (("strict", False), ("unordered", False), ("subset", False), ("subset", True),
                           ("superset", False), ("superset", True)):
        tests.append({"kind": "tool_calls", "calls": expected, "match": match, "ordered": ordered})
    for rules in ("subset", "ignore", {"query": "normalized", "limit": "numeric"},
                  {"query": {"mode": "regex"}, "*": "ignore"}):
        tests.append({"kind": "tool_calls", "calls": [{"tool": "search", "args": {"query": "refund.*" if isinstance(
            rules, dict) and "*" in rules else "refund policy", "limit": 5}}], "match": "superset",
            "args_match": rules})
    return tests


def _tool_result_tests() -> list[dict]:
    return [
        {"kind": "tool_result", "tool": "refund", "match": "exact", "expected": {"status": "refunded", "amount": 12.5}},
        {"kind": "tool_result", "tool": "refund", "match": "subset", "expected": {"status": "refunded"}},
        {"kind": "tool_result", "tool": "search", "match": "exact", "expected": RESULTS[1]},
        {"kind": "tool_result", "tool": "search", "match": "normalized", "expected": "policy refunds within 30 days"},
        {"kind": "tool_result", "tool": "search", "match": "numeric", "expected": "30", "rel_tol": 0.01},
        {"kind": "tool_result", "tool": "search", "match": "regex", "expected": r"Policy: .*"},
    ]


TRAJECTORY_TASK = Task(id="agent", prompt="Refund order A-17.", tests=_tool_calls_tests() + _tool_result_tests())


def _steps(calls: list[tuple[str, Any]], results: list[tuple[str, str]]) -> list[Step]:
    steps = []
    for k, (tool, args) in enumerate(calls):
        steps.append(Step(type="tool_call", tool=tool, arguments=args, tool_call_id=f"c{k}"))
    for k, (tool, content) in enumerate(results):
        steps.append(Step(type="tool_result", role="tool", tool=tool, content=content))
    return steps


HONEST_AGENT = Trajectory(id="agent_ok", answer="Refunded.", steps=_steps(
    CALLS, [("search", RESULTS[1]), ("refund", RESULTS[0])]))
WRONG_AGENT = Trajectory(id="agent_wrong", answer="Refunded.", steps=_steps(
    [("search", {"query": "other", "limit": 1})], [("search", "nothing")]))

HOSTILE_TEXT = st.one_of(st.text(max_size=30), st.sampled_from(
    ["\ud800", "12.5\udfff", "1e99999", "9" * 5000, "-" * 3 + "∞", "NaN", "[" * 5000, '{"a": ' * 3000,
     '{"status": "refunded", "amount": 1e400}', '{"amount": ' + "9" * 5000 + "}"]))


@HYPOTHESIS
@given(args=st.lists(st.one_of(ODD, st.dictionaries(st.sampled_from(["query", "limit", "order", "amount"]), ODD,
                                                    max_size=4)), min_size=1, max_size=3),
       contents=st.lists(HOSTILE_TEXT, min_size=1, max_size=3))
def test_hostile_trajectories_never_move_honest_verdicts(args, contents):
    tools = ["search", "refund", "search"]
    hostile = Trajectory(id="agent_hostile", answer="x", steps=_steps(
        [(tools[k % 3], a) for k, a in enumerate(args)], [(tools[k % 3], c) for k, c in enumerate(contents)]))
    baseline = evaluate(TRAJECTORY_TASK, HONEST_AGENT, WRONG_AGENT)
    mixed = evaluate(TRAJECTORY_TASK, HONEST_AGENT, hostile, WRONG_AGENT)
    assert mixed.status is Status.ok, mixed.error
    assert mixed.candidate("agent_ok").passed is True
    for cid in ("agent_ok", "agent_wrong"):
        assert verdicts(mixed, cid) == verdicts(baseline, cid)
    assert mixed.best == ["agent_ok"] or "agent_hostile" in mixed.best


def test_a_comparator_that_raises_is_a_mismatch_or_an_error_never_a_pass():
    hostile = Trajectory(id="agent_hostile", answer="x", steps=_steps(
        [("search", {"query": Weird(), "limit": 10 ** 5000}), ("refund", {"order": "A-17", "amount": Weird()})],
        [("search", "Policy: \ud800 30"), ("refund", '{"status": "refunded", "amount": ' + "9" * 5000 + "}")]))
    result = evaluate(TRAJECTORY_TASK, HONEST_AGENT, hostile)
    assert result.status is Status.ok and result.best == ["agent_ok"]
    tests = result.candidate("agent_hostile").details["tests"]
    # Every test that compares the weird arguments exactly (the six match modes) is not a pass;
    # a raising comparison is a mismatch naming it, a check that raises is an error naming it.
    assert all(t["outcome"] in ("fail", "error") for t in tests[:6])
    # The comparison rules (comparison.py) never raise: a huge integer or an odd object is a plain
    # mismatch naming the value, never a pass and never an error of the task.
    assert any(t["outcome"] == "fail" and "999999999" in t["message"] for t in tests)
    assert any(t["outcome"] == "fail" and "Weird()" in t["message"] for t in tests)


# ---------------------------------------------------------------- reference answers

REFERENCES = [("exact", "42", "42"), ("normalized", "The answer is 42.", "the answer is 42"),
              ("numeric", "42.0", "about 42"), ("regex", r"4\d", "42"), ("set", "a, b, c", "c, b, a")]


@HYPOTHESIS
@given(answers=st.lists(HOSTILE_TEXT, min_size=1, max_size=3))
@pytest.mark.parametrize("mode,reference,good", REFERENCES)
def test_hostile_answers_never_move_honest_reference_verdicts(mode, reference, good, answers):
    task = Task(id=f"ref-{mode}", prompt="What is it?", reference=reference, reference_check={"mode": mode})
    honest = [Trajectory(id="good", answer=good), Trajectory(id="bad", answer="17 and nothing else")]
    baseline = evaluate(task, *honest)
    hostile = [Trajectory(id=f"h{k}", answer=a) for k, a in enumerate(answers)]
    mixed = evaluate(task, honest[0], *hostile, honest[1])
    assert mixed.status is Status.ok, mixed.error
    assert mixed.candidate("good").passed is True
    for cid in ("good", "bad"):
        assert verdicts(mixed, cid) == verdicts(baseline, cid)


def test_an_answer_that_breaks_the_regex_engine_is_its_error_with_the_reason():
    task = Task(id="ref", prompt="?", reference=r"4\d", reference_check={"mode": "regex"})
    result = evaluate(task, Trajectory(id="good", answer="42"), Trajectory(id="lone", answer="4\ud800"))
    assert result.status is Status.ok and result.best == ["good"]
    lone = result.candidate("lone")
    assert lone.passed is False
    if lone.details.get("outcome") == "error":  # RE2 refuses a lone surrogate: the reason is kept
        assert "could not be checked" in lone.details["message"] and "Error" in lone.details["message"]


# ---------------------------------------------------------------- end to end in the real sandbox

ADD_PROMPT = 'def f(x):\n    """Return x / 2."""\n'
HALF = Task(id="half", prompt=ADD_PROMPT, entry_point="f", tests=[
    {"kind": "call", "call": "f(5)", "expected": 2.5, "name": "half"},
    {"kind": "assert", "code": "assert f(4) == 2", "name": "even"}])
GOOD = Trajectory(id="good", code="def f(x):\n    return x / 2\n")


@pytest.mark.sandbox
@pytest.mark.parametrize("code", [
    "def f(x):\n    return 10 ** 400\n",                       # overflows a float comparison
    "def f(x):\n    return 10 ** 5000 if x == 5 else 2\n",      # past the int-to-text digit limit
    "def f(x):\n    return '\\ud800'\n",                        # a lone surrogate
    "def f(x):\n    v = 0\n    for _ in range(20000):\n        v = [v]\n    return v\n",  # deep nesting
    "def f(x):\n    return float('nan')\n",
])
def test_hostile_values_in_real_runs_sink_no_one(code):
    result = evaluate(HALF, GOOD, Trajectory(id="hostile", code=code))
    assert result.status is Status.ok, result.error
    assert result.candidate("good").passed is True and result.best == ["good"]
    assert [t["outcome"] for t in result.candidate("good").details["tests"]] == ["pass", "pass"]
    assert result.candidate("hostile").details["tests"][0]["outcome"] in ("fail", "error")


@pytest.mark.sandbox
def test_code_extraction_that_raises_is_that_candidates_error():
    hostile = Trajectory(id="hostile", answer="x=" + "1+" * 200000 + "1")  # RecursionError in ast.parse
    result = evaluate(HALF, GOOD, hostile)
    assert result.status is Status.ok and result.best == ["good"]
    tests = result.candidate("hostile").details["tests"]
    assert [t["outcome"] for t in tests] == ["error", "error"]
    assert "could not be extracted" in tests[0]["message"] and "RecursionError" in tests[0]["message"]
    assert result.candidate("hostile").score == 0.0


@pytest.mark.sandbox
def test_a_candidate_in_a_language_the_verifier_does_not_run_fails_alone():
    task = Task(id="any", prompt="Write f.", entry_point="f", tests=HALF.tests)
    rust = Trajectory(id="rust", answer="```rust\nfn f(x: f64) -> f64 { x / 2.0 }\n```")
    result = evaluate(task, GOOD, rust)
    assert result.status is Status.ok and result.best == ["good"]
    assert all(t["outcome"] == "error" and "'rust'" in t["message"]
               for t in result.candidate("rust").details["tests"])


@pytest.mark.sandbox
def test_a_sandbox_failure_on_one_candidates_run_leaves_it_unscored_and_the_others_judged(monkeypatch):
    real = verifier_module.run_in_pool

    def flaky(pool: Any, plan: Any) -> RunResult:
        if "UNLUCKY" in plan.candidate_spec["code"] and plan.test_spec.get("kind") == "assert":
            raise SandboxError("the sandbox workers failed twice: injected")
        return real(pool, plan)

    monkeypatch.setattr(verifier_module, "run_in_pool", flaky)
    unlucky = Trajectory(id="unlucky", code="# UNLUCKY\ndef f(x):\n    return x / 2\n")
    wrong = Trajectory(id="wrong", code="def f(x):\n    return x\n")
    result = evaluate(HALF, unlucky, GOOD, wrong)
    assert result.status is Status.ok
    assert result.best == ["good"] and result.ranking == ["good", "wrong"]
    hit = result.candidate("unlucky")
    assert hit.status is Status.failed and hit.score is None and hit.passed is None
    assert [t["outcome"] for t in hit.details["tests"]] == ["pass", "error"]
    assert "our fault, not the candidate's" in hit.details["tests"][1]["message"]
    concerns = {c.kind: c for c in result.concerns}
    assert concerns["sandbox_failure"].candidates == ["unlucky"]
    assert "injected" in concerns["sandbox_failure"].evidence.message
    assert result.candidate("wrong").passed is False and result.candidate("wrong").status is Status.ok


@pytest.mark.sandbox
def test_a_sandbox_failure_on_every_run_is_the_tasks_failure(monkeypatch):
    def broken(pool: Any, plan: Any) -> RunResult:
        raise SandboxError("the sandbox workers failed twice: injected")

    monkeypatch.setattr(verifier_module, "run_in_pool", broken)
    result = evaluate(HALF, GOOD, Trajectory(id="other", code="def f(x):\n    return 0\n"))
    assert result.status is Status.failed and result.error.type == "SandboxError"
    assert [c.kind for c in result.concerns] == ["sandbox_failure"]


@pytest.mark.sandbox
def test_a_sandbox_failure_hitting_every_candidate_somewhere_is_the_tasks_failure(monkeypatch):
    real = verifier_module.run_in_pool

    def half_broken(pool: Any, plan: Any) -> RunResult:
        if plan.test_spec.get("kind") == "assert":
            raise SandboxError("the sandbox workers failed twice: injected")
        return real(pool, plan)

    monkeypatch.setattr(verifier_module, "run_in_pool", half_broken)
    result = evaluate(HALF, GOOD, Trajectory(id="other", code="def f(x):\n    return 0\n"))
    assert result.status is Status.failed and result.error.type == "SandboxError"
    assert "every candidate" in result.error.message
    assert {c["id"] for c in result.details["candidates_unscored"]} == {"good", "other"}
