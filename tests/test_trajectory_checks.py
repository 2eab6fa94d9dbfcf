"""Trajectory checks: tool_calls match modes and argument comparators, tool_result selection and
the trust model (only real tool steps count), final_state in the sandbox, load-time validation."""

from __future__ import annotations

import asyncio
import json

import pytest

from oracle.config.model import OracleConfig
from oracle.errors import TaskValidationError
from oracle.results.result import Status
from oracle._evaluators import evaluator_factory
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, TaskInput, Trajectory
from oracle.strategies.verifier.trajectory import decode_arguments, tool_results
from oracle.strategies.verifier.trajectory_checks import check_tool_calls, check_tool_result
from oracle.tasks.testspec import ToolCallsTest, ToolResultTest
from tests.profiles import examples


def call(tool, args=None, cid=None):
    return {"type": "tool_call", "role": "assistant", "tool": tool, "arguments": args, "tool_call_id": cid}


def result(content, cid=None, tool=None, role="tool"):
    return {"type": "tool_result", "role": role, "tool": tool, "content": content, "tool_call_id": cid}


def traj(*steps, answer="done"):
    return Trajectory(id="c", answer=answer, steps=list(steps))


def calls_test(calls, **kw):
    return ToolCallsTest(kind="tool_calls", calls=calls, **kw)


def run_calls(test, trajectory):
    out = check_tool_calls(test, 0, trajectory)
    return out.outcome, out.message


SEARCH_X = {"tool": "search", "args": {"query": "x"}}
OPEN_1 = {"tool": "open", "args": {"id": 1}}


# -- tool_calls: match modes ----------------------------------------------------------------------

def test_strict_names_the_first_mismatch_like_the_issue():
    test = calls_test([OPEN_1, {"tool": "open", "args": {"id": 2}}, SEARCH_X])
    got = traj(call("open", {"id": 1}), call("open", {"id": 2}), call("browse", {"url": "u"}))
    outcome, message = run_calls(test, got)
    assert outcome == "fail"
    assert message == "call 3: expected tool 'search' with query='x', got 'browse'"


def test_strict_order_and_count_matter():
    test = calls_test([SEARCH_X, OPEN_1])
    assert run_calls(test, traj(call("search", {"query": "x"}), call("open", {"id": 1})))[0] == "pass"
    assert run_calls(test, traj(call("open", {"id": 1}), call("search", {"query": "x"})))[0] == "fail"
    outcome, message = run_calls(test, traj(call("search", {"query": "x"})))
    assert outcome == "fail" and message.startswith("call 2: expected tool 'open' with id=1, got no call")
    outcome, message = run_calls(test, traj(call("search", {"query": "x"}), call("open", {"id": 1}), call("open")))
    assert outcome == "fail" and message.startswith("call 3: unexpected call to 'open'")


def test_unordered_is_a_multiset():
    test = calls_test([SEARCH_X, SEARCH_X, OPEN_1], match="unordered")
    good = traj(call("open", {"id": 1}), call("search", {"query": "x"}), call("search", {"query": "x"}))
    assert run_calls(test, good)[0] == "pass"
    # Same length, but the multiset differs: two opens and one search.
    bad = traj(call("open", {"id": 1}), call("search", {"query": "x"}), call("open", {"id": 1}))
    outcome, message = run_calls(test, bad)
    assert outcome == "fail" and "expected call" in message and "'search'" in message


def test_unordered_needs_augmenting_paths():
    """A greedy pairing fails here (the loose call grabs the only partner of the strict one);
    a maximum matching finds the pairing."""
    test = calls_test([{"tool": "search"}, {"tool": "search", "args": {"query": "x"}}], match="unordered")
    got = traj(call("search", {"query": "x"}), call("search", {"query": "y"}))
    assert run_calls(test, got)[0] == "pass"


def test_subset_and_superset():
    expected = [SEARCH_X, OPEN_1, {"tool": "close"}]
    subset, superset = calls_test(expected, match="subset"), calls_test(expected, match="superset")
    few = traj(call("open", {"id": 1}))
    many = traj(call("close"), call("log", {"m": 1}), call("open", {"id": 1}), call("search", {"query": "x"}))
    assert run_calls(subset, few)[0] == "pass"
    outcome, message = run_calls(subset, traj(call("open", {"id": 1}), call("rm", {"p": "/"})))
    assert outcome == "fail" and message.startswith("call 2: 'rm' with p='/' is not one of the expected calls")
    assert run_calls(superset, many)[0] == "pass"
    outcome, message = run_calls(superset, few)
    assert outcome == "fail" and "expected call 1 (tool 'search' with query='x')" in message


def test_ordered_superset_and_subset_keep_the_expected_order():
    expected = [SEARCH_X, OPEN_1]
    sup = calls_test(expected, match="superset", ordered=True)
    assert run_calls(sup, traj(call("search", {"query": "x"}), call("log"), call("open", {"id": 1})))[0] == "pass"
    outcome, message = run_calls(sup, traj(call("open", {"id": 1}), call("search", {"query": "x"})))
    assert outcome == "fail" and "not found in order" in message
    sub = calls_test(expected, match="subset", ordered=True)
    assert run_calls(sub, traj(call("open", {"id": 1})))[0] == "pass"
    assert run_calls(sub, traj(call("open", {"id": 1}), call("search", {"query": "x"})))[0] == "fail"


def test_an_empty_expected_list_means_no_calls_in_strict_mode():
    test = calls_test([])
    assert run_calls(test, traj())[0] == "pass"
    assert run_calls(test, traj(call("rm")))[0] == "fail"


# -- tool_calls: arguments ------------------------------------------------------------------------

def test_arguments_as_json_strings_or_objects_compare_the_same():
    test = calls_test([{"tool": "search", "args": {"query": "x", "limit": 3}}])
    as_string = traj(call("search", '{"limit": 3.0, "query": "x"}'))
    as_object = traj(call("search", {"query": "x", "limit": 3}))
    assert run_calls(test, as_string)[0] == "pass"
    assert run_calls(test, as_object)[0] == "pass"


def test_arguments_that_are_not_json_are_a_mismatch_with_the_reason():
    test = calls_test([SEARCH_X])
    outcome, message = run_calls(test, traj(call("search", "{query: x")))
    assert outcome == "fail" and "arguments are not valid JSON" in message and message.startswith("call 1:")
    outcome, message = run_calls(test, traj(call("search", "[1, 2]")))
    assert outcome == "fail" and "arguments are a JSON array, not an object" in message
    # Ignored arguments are not read at all.
    assert run_calls(calls_test([SEARCH_X], args_match="ignore"), traj(call("search", "{oops")))[0] == "pass"
    assert decode_arguments("1" * 5000)[1] is not None  # past Python's int digit limit: a reason, no crash


def test_args_modes_exact_subset_ignore():
    got = traj(call("search", {"query": "x", "lang": "en"}))
    outcome, message = run_calls(calls_test([SEARCH_X]), got)
    assert outcome == "fail" and "unexpected argument 'lang'" in message
    assert run_calls(calls_test([SEARCH_X], args_match="subset"), got)[0] == "pass"
    assert run_calls(calls_test([SEARCH_X], args_match="ignore"), got)[0] == "pass"
    missing = run_calls(calls_test([{"tool": "search", "args": {"query": "x", "page": 2}}], args_match="subset"), got)
    assert missing[0] == "fail" and "missing argument 'page'" in missing[1]
    # exact: true is not 1, "3" is not 3
    assert run_calls(calls_test([{"tool": "f", "args": {"a": 1}}]), traj(call("f", {"a": True})))[0] == "fail"
    assert run_calls(calls_test([{"tool": "f", "args": {"a": 3}}]), traj(call("f", {"a": "3"})))[0] == "fail"


def test_per_argument_comparators():
    expected = {"tool": "refund", "args": {"order": "A-17", "amount": 19.99, "note": r"refund(ed)? .*", "ts": 0}}
    rules = {"order": "normalized", "amount": {"mode": "numeric", "abs_tol": 0.01}, "note": "regex", "ts": "ignore"}
    test = calls_test([expected], args_match=rules)
    good = traj(call("refund", {"order": "a-17.", "amount": "19.995", "note": "refunded in full", "ts": 171}))
    assert run_calls(test, good)[0] == "pass"
    # normalized ignores case and edge punctuation, never a sign: "a 17" is not "A-17"
    unsigned = traj(call("refund", {"order": "a 17", "amount": "19.995", "note": "refunded in full", "ts": 171}))
    assert run_calls(test, unsigned)[0] == "fail"
    off = traj(call("refund", {"order": "A-17", "amount": 20.5, "note": "refunded in full", "ts": 1}))
    outcome, message = run_calls(test, off)
    assert outcome == "fail" and "argument amount:" in message and "outside tolerance" in message
    bad_note = traj(call("refund", {"order": "A-17", "amount": 19.99, "note": "sorry", "ts": 1}))
    assert "argument note:" in run_calls(test, bad_note)[1]
    extra = traj(call("refund", {"order": "A-17", "amount": 19.99, "note": "refunded in full", "ts": 1, "by": "bot"}))
    outcome, message = run_calls(test, extra)
    assert outcome == "fail" and "unexpected argument 'by'" in message
    assert run_calls(calls_test([expected], args_match={**rules, "*": "ignore"}), extra)[0] == "pass"
    # A call's own args_match wins over the test's.
    own = calls_test([{"tool": "f", "args": {"q": "X!"}, "args_match": {"q": "normalized"}}])
    assert run_calls(own, traj(call("f", {"q": "x"})))[0] == "pass"


def test_regex_comparator_uses_re2_linear_time():
    test = calls_test([{"tool": "f", "args": {"q": "(a+)+$"}}], args_match={"q": "regex"})
    outcome, _ = run_calls(test, traj(call("f", {"q": "a" * 5000 + "!"})))
    assert outcome == "fail"  # returns at once: RE2 does not backtrack


# -- tool_result: selection and the trust model ---------------------------------------------------

def result_test(**kw):
    return ToolResultTest(kind="tool_result", **kw)


def run_result(test, trajectory):
    out = check_tool_result(test, 0, trajectory)
    return out.outcome, out.message


def test_tool_result_by_id_and_by_occurrence():
    t = traj(call("search", {"q": 1}, cid="c1"), result('{"hits": 3}', cid="c1"),
             call("search", {"q": 2}, cid="c2"), result('{"hits": 0, "took_ms": 5}', cid="c2"))
    assert run_result(result_test(tool_call_id="c2", expected={"hits": 0}, match="subset"), t)[0] == "pass"
    assert run_result(result_test(tool="search", occurrence=1, expected={"hits": 3}), t)[0] == "pass"
    outcome, message = run_result(result_test(tool="search", occurrence=2, expected={"hits": 3}, match="subset"), t)
    assert outcome == "fail" and "hits: expected 3, got 0" in message
    outcome, message = run_result(result_test(tool="search", occurrence=3, expected="x"), t)
    assert outcome == "fail" and "the tool has 2 counted result(s)" in message
    assert run_result(result_test(tool_call_id="c9", expected="x"), t)[0] == "fail"


def test_tool_result_comparators():
    t = traj(call("calc", cid="a"), result("Total: 41.999 EUR", cid="a"))
    assert run_result(result_test(tool="calc", expected="42", match="numeric", abs_tol=0.01), t)[0] == "pass"
    assert run_result(result_test(tool="calc", expected="total 41.999 eur", match="normalized"), t)[0] == "pass"
    # a decimal point carries value: 41 999 is another number
    assert run_result(result_test(tool="calc", expected="total 41 999 eur", match="normalized"), t)[0] == "fail"
    assert run_result(result_test(tool="calc", expected=r"Total: \d+\.\d+ EUR", match="regex"), t)[0] == "pass"
    outcome, message = run_result(result_test(tool="calc", expected={"total": 42}), t)
    assert outcome == "fail" and "not valid JSON" in message


def test_a_result_fabricated_in_the_answer_does_not_count():
    honest = traj(call("refund", {"order": "A1"}, cid="c1"), result('{"status": "refunded"}', cid="c1"))
    liar = traj(call("lookup", {"order": "A1"}, cid="c1"), result('{"status": "open"}', cid="c1"),
                answer='Done. refund returned {"status": "refunded"}')
    test = result_test(tool="refund", expected={"status": "refunded"}, match="subset")
    assert run_result(test, honest)[0] == "pass"
    outcome, message = run_result(test, liar)
    assert outcome == "fail" and "no result 1 of tool 'refund'" in message


def test_tool_results_the_model_wrote_itself_do_not_count():
    """A tool_result step with role assistant, one answering a call never made, and a second answer
    to the same call are the candidate's claims, not the environment's."""
    steps = [call("lookup", cid="c1"), result('{"status": "open"}', cid="c1"),
             result('{"status": "refunded"}', tool="refund", role="assistant"),
             result('{"status": "refunded"}', cid="c7", tool="refund"),
             result('{"status": "refunded"}', cid="c1")]
    counted, ignored = tool_results(traj(*steps))
    assert [r.step for r in counted] == [1]
    assert [i.step for i in ignored] == [2, 3, 4]
    outcome, message = run_result(result_test(tool="refund", expected={"status": "refunded"}, match="subset"),
                                  traj(*steps))
    assert outcome == "fail" and "not counted" in message and "role 'assistant'" in message
    # A result must follow its call: the same step before the call does not count.
    early = traj(result("42", cid="c1"), call("calc", cid="c1"))
    assert run_result(result_test(tool_call_id="c1", expected="42"), early)[0] == "fail"


def test_results_without_ids_pair_with_the_latest_unanswered_call_of_their_tool():
    t = traj(call("search"), call("open"), result("page", tool="open"), result("hits"))
    counted, _ = tool_results(t)
    assert [(r.tool, r.content) for r in counted] == [("open", "page"), ("search", "hits")]


def test_openai_messages_keep_tool_call_ids():
    item = TaskInput.model_validate({"task": {"id": "t", "prompt": "p", "tests": [
        {"kind": "tool_result", "tool_call_id": "call_b", "expected": "B"}]}, "trajectories": [[
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "get", "arguments": '{"k": "a"}'}},
                {"id": "call_b", "type": "function", "function": {"name": "get", "arguments": '{"k": "b"}'}}]},
            {"role": "tool", "tool_call_id": "call_b", "content": "B"},
            {"role": "tool", "tool_call_id": "call_a", "content": "A"},
            {"role": "assistant", "content": "A and B"}]]})
    steps = item.trajectories[0].steps
    assert [s.tool_call_id for s in steps[:4]] == ["call_a", "call_b", "call_b", "call_a"]
    assert check_tool_result(item.task.tests[0], 0, item.trajectories[0]).outcome == "pass"
    counted, _ = tool_results(item.trajectories[0])
    assert [(r.tool, r.content) for r in counted] == [("get", "B"), ("get", "A")]


# -- validation at load ---------------------------------------------------------------------------

@pytest.mark.parametrize("test, field", [
    ({"kind": "tool_calls", "calls": [{"tool": "s", "args": {"q": "("}}], "args_match": {"q": "regex"}},
     "calls[0].args.q: invalid regular expression"),
    ({"kind": "tool_calls", "calls": [{"tool": "s", "args": {"q": 1}}], "args_match": {"z": "exact"}},
     "args_match.z"),
    ({"kind": "tool_calls", "calls": [{"tool": "s", "args": {"q": "abc"}}], "args_match": {"q": "numeric"}},
     "args.q: a numeric comparator needs a number"),
    ({"kind": "tool_calls", "calls": [{"tool": "s"}], "match": "unordered", "ordered": True}, "ordered"),
    ({"kind": "tool_calls", "calls": [{"tool": "s", "args": {"q": 1}}], "args_match": {"*": "exact"}},
     "args_match.*: only 'ignore'"),
    ({"kind": "tool_calls", "calls": [{"tool": "s", "args_match": {"q": "exact"}}]}, "calls[0].args_match"),
    ({"kind": "tool_calls", "calls": [{"tool": "s"}], "match": "some"}, "task.tests[0].match"),
    ({"kind": "tool_calls", "calls": [{"tool": ""}]}, "task.tests[0].calls[0].tool"),
    ({"kind": "tool_result", "expected": 1}, "tool_call_id: give exactly one"),
    ({"kind": "tool_result", "tool_call_id": "c", "occurrence": 2, "expected": 1}, "occurrence"),
    ({"kind": "tool_result", "tool": "s", "expected": [1], "match": "subset"}, "expected: match subset"),
    ({"kind": "tool_result", "tool": "s", "expected": 3, "match": "regex"}, "expected: match regex"),
    ({"kind": "final_state", "code": "def verify(t): pass"}, "task.tests[0].code: must define check"),
    ({"kind": "final_state", "code": "def check(:"}, "task.tests[0].code: does not parse"),
])
def test_bad_trajectory_tests_are_rejected_at_load_naming_the_field(test, field):
    with pytest.raises(TaskValidationError) as err:
        Task(id="t", prompt="p", tests=[test])
    assert field in str(err.value)


def test_many_expected_calls_are_refused():
    with pytest.raises(TaskValidationError, match="calls"):
        Task(id="t", prompt="p", tests=[{"kind": "tool_calls", "calls": [{"tool": "s"}] * 201}])


# -- through the verifier -------------------------------------------------------------------------

def evaluate(task: Task, *trajectories: Trajectory):
    config = OracleConfig(verifier={"timeout_s": 5})
    strategy = evaluator_factory("verifier")()
    return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=config)))


def test_data_checks_alone_run_nothing():
    task = Task(id="t", prompt="p", tests=[{"kind": "tool_calls", "calls": [SEARCH_X]}])
    res = evaluate(task, Trajectory(id="a", steps=[call("search", {"query": "x"})]),
                   Trajectory(id="b", answer="I searched for x"))
    assert res.status is Status.ok and res.best == ["a"]
    assert res.provenance.execution.code_run is False and res.provenance.execution.integrity == "trajectory"
    assert res.candidate("b").details["tests"][0]["message"].startswith("call 1: expected tool 'search'")
    assert res.candidate("b").details["tests"][0]["integrity"] == "trajectory"


@pytest.mark.slow
@pytest.mark.sandbox
def test_final_state_runs_in_the_sandbox_on_the_trajectory_json():
    code = ("import os\n"
            "def check(trajectory):\n"
            "    calls = [s for s in trajectory['steps'] if s['type'] == 'tool_call']\n"
            "    assert calls, 'no tool calls'\n"
            "    assert calls[-1]['args'] == {'path': 'a.txt', 'text': 'hi'}, calls[-1]['args']\n"
            "    assert os.getuid() != %d, 'ran as the host user'\n"
            "    results = [s for s in trajectory['steps'] if s['type'] == 'tool_result']\n"
            "    assert [s['counted'] for s in results] == [True, False], results\n"
            "    return 'fine'\n" % __import__("os").getuid())
    false_check = "def check(trajectory):\n    return trajectory['answer'] == 'ok'\n"
    task = Task(id="fs", prompt="p", tests=[{"kind": "final_state", "code": code, "name": "state"},
                                            {"kind": "final_state", "code": false_check, "name": "answer"}])
    good = Trajectory(id="good", answer="ok", steps=[call("write", json.dumps({"path": "a.txt", "text": "hi"}), "w1"),
                                                     result("written", "w1"), result("also written", "w1")])
    wrong = Trajectory(id="wrong", answer="no", steps=[call("write", {"path": "b.txt", "text": "hi"})])
    # An answer that tries to break out of the data: it stays a string.
    hostile = Trajectory(id="hostile", answer="')\nimport os; os._exit(0)#", steps=[
        call("write", "\"\"\")\nraise SystemExit\n")])
    res = evaluate(task, good, wrong, hostile)
    assert res.status is Status.ok, res.error
    tests = {c.id: {t["name"]: t for t in c.details["tests"]} for c in res.candidates}
    assert tests["good"]["state"]["outcome"] == "pass" and tests["good"]["answer"]["outcome"] == "pass"
    assert tests["wrong"]["state"]["outcome"] == "fail" and "b.txt" in tests["wrong"]["state"]["message"]
    assert tests["wrong"]["answer"]["outcome"] == "fail"
    assert "returned False" in tests["wrong"]["answer"]["message"]
    assert tests["hostile"]["state"]["outcome"] == "fail" and "None" in tests["hostile"]["state"]["message"]
    assert res.provenance.execution.code_run is True and res.best == ["good"]


@pytest.mark.sandbox
def test_code_tests_and_trajectory_tests_together():
    """A coding agent: its final code is tested, and its trajectory must show it ran the tests."""
    task = Task(id="mix", prompt="def add(a, b):\n", entry_point="add", tests=[
        {"kind": "call", "call": "add(2, 3)", "expected": 5},
        {"kind": "tool_calls", "calls": [{"tool": "run_tests"}], "match": "superset"}])
    both = Trajectory(id="both", code="def add(a, b):\n    return a + b\n", steps=[call("edit"), call("run_tests")])
    untested = Trajectory(id="untested", code="def add(a, b):\n    return a + b\n", steps=[call("edit")])
    no_code = Trajectory(id="no_code", steps=[call("run_tests")])
    res = evaluate(task, both, untested, no_code)
    assert res.status is Status.ok
    outcomes = {c.id: [t["outcome"] for t in c.details["tests"]] for c in res.candidates}
    assert outcomes == {"both": ["pass", "pass"], "untested": ["pass", "fail"], "no_code": ["error", "pass"]}
    assert res.best == ["both"]


# -- whatever the trajectory holds, a check answers pass or fail ---------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda inner: (st.lists(inner, max_size=3)
                                    | st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                     max_leaves=8)
_tools = st.sampled_from(["search", "open", None, ""])
_steps = st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["tool_call", "tool_result", "message", "reasoning"]),
    "role": st.sampled_from(["assistant", "tool", "user", None]),
    "tool": _tools,
    "content": st.text(max_size=20) | _json.map(json.dumps),
    "arguments": _json | st.text(max_size=20),
    "tool_call_id": st.sampled_from(["c1", "c2", None]),
}), max_size=8)


@settings(max_examples=examples(300), deadline=None)
@given(steps=_steps, mode=st.sampled_from(["strict", "unordered", "subset", "superset"]), ordered=st.booleans(),
       args_match=st.sampled_from(["exact", "ignore", "subset", {"query": "normalized", "*": "ignore"},
                                   {"query": {"mode": "numeric", "abs_tol": 1}}, {"query": "regex"}]),
       expected=_json, result_match=st.sampled_from(["exact", "normalized", "numeric", "regex", "subset"]))
def test_checks_never_crash_on_arbitrary_steps(steps, mode, ordered, args_match, expected, result_match):
    trajectory = Trajectory(id="x", steps=steps)
    calls = [{"tool": "search", "args": {"query": "1.5"}}, {"tool": "open"}]
    test = calls_test(calls, match=mode, ordered=ordered and mode in ("subset", "superset"), args_match=args_match)
    assert check_tool_calls(test, 0, trajectory).outcome in ("pass", "fail")
    try:
        rtest = ToolResultTest(kind="tool_result", tool="search", expected=expected, match=result_match)
    except ValueError:  # an expected value the mode cannot take is refused at load
        return
    assert check_tool_result(rtest, 0, trajectory).outcome in ("pass", "fail")
