"""What crosses between the test and the candidate, and what it means on arrival.

- Nothing of the test's namespace reaches the candidate unless the test hands it over
  (``bind_global``, or a prompt-declared global the test assigns and never reads), whatever names
  the candidate defines: Hypothesis over name sets, through real processes and the real sandbox.
- Exceptions keep their built-in type; those with control-flow meaning (StopIteration, exits,
  AssertionError, other BaseExceptions) arrive as ``CandidateRaised*`` RuntimeErrors; a test's own
  failed assert inside a callback cannot be swallowed by the candidate.
- Container arguments the candidate mutates in place are written back to the test's objects, with
  plain data only.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.strategies.verifier import harness
from oracle.sandbox.runtime import handover, rpc
from oracle.tasks.task import Task, Trajectory
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend
from tests.profiles import examples

from .channel_support import run_cases, run_one
from .test_verdict_integrity import _evaluate


# -- names a test defines and a candidate may define too --------------------------------------
POOL = ["expected", "EXPECTED", "want", "answer", "reference", "solution", "ref_impl", "check", "helper",
        "build_db", "expected_for", "TOKEN", "candidate", "data", "cases", "result", "_private", "len",
        "sorted", "print", "__secret__", "CONN", "Box", "setglobal", "globals_", "METADATA"]
TEST_SHAPES = ["value", "container", "function", "class", "global_fn", "late"]
CAND_SHAPES = ["none", "function", "value", "absent"]

CANDIDATE_PROBE = '''
def add(a, b):
    return a + b

def given():
    return GIVEN

def slot():
    return SLOT

def probe():
    """Look at every global this module has at call time, and call what can be called."""
    import builtins as b
    found = []
    g = b.globals()
    for n in b.sorted(b.set(b.list(g) + NAMES)):
        if n in ("probe", "add", "given", "slot", "__builtins__", "b"):
            continue
        v = g.get(n)
        attempts = (lambda: v, lambda: v(), lambda: v(1), lambda: v(1, 2), lambda: v.secret, lambda: v().secret,
                    lambda: v.value, lambda: b.list(v), lambda: v["k"], lambda: v(add), lambda: v(CONN))
        for attempt in attempts:
            try:
                text = b.repr(attempt())
            except BaseException:
                continue
            if "tok-" in text:
                found.append(n)
                break
    return b.sorted(b.set(found))
'''


def candidate_source(shapes: dict[str, str]) -> str:
    lines = [f"NAMES = {sorted(shapes)!r}"]
    for name, shape in shapes.items():
        if shape == "none":
            lines.append(f"{name} = None")
        elif shape == "function":
            lines.append(f"def {name}(*a, **k):\n    return 'mine'")
        elif shape == "value":
            lines.append(f"{name} = 0")
    return "\n".join(lines) + "\n" + CANDIDATE_PROBE


def _test_source(shapes: dict[str, str], token: str) -> str:
    lines = [f"TOKEN = {token!r}", "SECRET = TOKEN"]
    late = []
    for name, shape in shapes.items():
        if name == "TOKEN":
            continue
        if shape == "value":
            lines.append(f"{name} = TOKEN")
        elif shape == "container":
            lines.append(f"{name} = {{'k': [TOKEN], 'v': TOKEN}}")
        elif shape == "function":
            lines.append(f"def {name}(*a, **k):\n    return SECRET")
        elif shape == "class":
            lines.append(f"class {name}:\n    secret = SECRET\n    value = SECRET\n"
                         f"    def __call__(self, *a):\n        return SECRET")
        elif shape == "global_fn":
            lines.append(f"def _set_{name.strip('_') or 'x'}():\n    global {name}\n    {name} = TOKEN\n"
                         f"_set_{name.strip('_') or 'x'}()")
        else:
            late.append(f"{name} = [TOKEN]")
    lines.append("assert add(2, 3) == 5")
    lines.append("leaks = probe()")
    lines += late
    lines.append("leaks = leaks + probe()")
    lines.append("bind_global('GIVEN', 7)\nassert given() == 7")
    lines.append("SLOT = 11\nassert slot() == 11")  # declared by the prompt, assigned, never read
    lines.append(f"_uses = [{', '.join(n for n in shapes)}]")  # the test reads its own data
    lines.append("assert leaks == [], leaks")
    return "\n".join(lines) + "\n"


def prompt_source(declared: list[str]) -> str:
    return "".join(f"{n} = None\n" for n in ["SLOT", *declared])


scenarios = st.dictionaries(st.sampled_from(POOL),
                            st.tuples(st.sampled_from(TEST_SHAPES), st.sampled_from(CAND_SHAPES)),
                            min_size=1, max_size=8)
tokens = st.text(string.ascii_lowercase + string.digits, min_size=6, max_size=12).map(lambda s: "tok-" + s)


def _case(scenario: dict, token: str, declared: list[str]) -> tuple[str, str, str]:
    cand = {n: c for n, (_, c) in scenario.items() if c != "absent"}
    return (candidate_source(cand), _test_source({n: t for n, (t, _) in scenario.items()}, token),
            prompt_source(declared))


# -- the sync rule itself (no process) ---------------------------------------------------------
@settings(max_examples=examples(200), derandomize=True)
@given(scenarios, tokens, st.lists(st.sampled_from(POOL), max_size=4))
def test_only_declared_unread_names_are_handed_over(scenario, token, declared):
    _, code, prompt = _case(scenario, token, declared)
    names = handover.handed_over({"kind": "assert", "code": code, "prompt_code": prompt, "entry_point": "probe"})
    # every name the test defines it also reads: none of them is sent, declared or not
    assert "SLOT" in names and not names & (set(scenario) | {"TOKEN", "SECRET", "leaks"})
    assert names <= {"SLOT", *declared}
    assert handover.handed_over({"kind": "assert", "code": code, "prompt_code": None}) == set()


def test_the_rule_on_the_n_plus_one_shapes():
    prompt = harness.prompt_definitions("Fix it.\n\n```python\nimport sqlite3\n\nCONN = None  # set at startup\n"
                                        "LIMIT: int = 3\nrows = CONN.execute('x')\n\ndef f():\n    pass\n```\n")
    assert prompt == "CONN = None\nLIMIT = 3\n"
    spec = {"kind": "assert", "prompt_code": prompt, "entry_point": "f"}
    assert handover.handed_over({**spec, "code": "def go():\n    global CONN\n    CONN = 1\n"
                                                 "go()\n"}) == {"CONN", "LIMIT"}
    assert handover.handed_over({**spec, "code": "CONN = 1\nassert CONN\n"}) == {"LIMIT"}  # read: its own data
    assert handover.handed_over({**spec, "code": "LIMIT += 1\n"}) == {"CONN"}
    assert handover.handed_over({**spec, "code": "syntax error here("}) == set()
    assert handover.handed_over({"kind": "call", "call": "f(CONN)", "prompt_code": prompt}) == {"LIMIT"}
    assert handover.declared_names("def f():\n    x = 1\nclass C:\n    y = 2\n"
                                   "a, (b, c) = 1, (2, 3)\n") == {"a", "b", "c"}


# -- through real processes (no sandbox): many name sets ---------------------------------------
@settings(max_examples=examples(25), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(scenarios, tokens, st.lists(st.sampled_from(POOL), max_size=3)), min_size=4, max_size=4))
def test_no_test_value_reaches_a_candidate_over_the_channel(batch):
    cases = []
    for scenario, token, declared in batch:
        cand, code, prompt = _case(scenario, token, declared)
        cases.append({"candidate": cand, "test": {"kind": "assert", "code": code, "entry_point": "probe",
                                                  "prompt_code": prompt}})
    for case, verdict in zip(cases, run_cases(cases)):
        assert verdict["outcome"] == "pass", (verdict, case["test"]["code"], case["candidate"])


def test_a_candidate_check_is_never_run_as_the_test():
    cand = "def f(x):\n    return 0\ndef check(candidate):\n    return None\n"
    verdict = run_one(cand, "assert True\n", entry_point="f", kind="check")
    # The test's own fault (broken: scored for no one), never the candidate's check passing it.
    assert verdict["outcome"] == "broken" and "no check function" in verdict["message"]


def test_bind_global_refuses_what_is_not_a_name_and_what_may_not_cross():
    cand = "def f():\n    return X\n"
    assert run_one(cand, "bind_global('X', [1, (2, 3)])\nassert f() == [1, (2, 3)]\n")["outcome"] == "pass"
    # Both are the test's own mistakes, made before it asked the candidate anything: broken.
    bad = run_one(cand, "bind_global('not a name', 1)\n")
    assert bad["outcome"] == "broken" and "bind_global" in bad["message"]
    mod = run_one(cand, "import os\nbind_global('X', os)\nf()\n")
    assert mod["outcome"] == "broken" and "wrap it in a class" in mod["message"]
    # A value that may not cross is the test's even after the candidate answered (a candidate that
    # steers a test there is caught across runs: tests/test_unsendable_blame.py).
    late = run_one(cand, "import os\nbind_global('X', 1)\nf()\nbind_global('X', os)\n")
    assert late["outcome"] == "broken" and "wrap it in a class" in late["message"]
    assert "broken by the test, not the candidate" in late["message"]


# -- exceptions --------------------------------------------------------------------------------
EXC_CANDIDATE = '''
class Sly(ValueError):
    def __eq__(self, other):
        return True
    __hash__ = None
    def __str__(self):
        return "sly"

def raise_it(kind, msg="m"):
    if kind == "sly":
        raise Sly("x")
    if kind == "pytest_skip":
        class Skipped(BaseException):
            pass
        raise Skipped("skip me")
    if kind == "group":
        raise BaseExceptionGroup("g", [KeyboardInterrupt()])
    import builtins
    raise getattr(builtins, kind)(msg)

def stop_at(x):
    if x >= 2:
        raise StopIteration
    return x

def swallow(fn, *args):
    try:
        fn(*args)
    except BaseException:
        pass
    return "ok"
'''

EXC_TESTS = {
    # ordinary exceptions keep their type (and plain args)
    "value_error": ("try:\n    raise_it('ValueError', 'bad')\nexcept ValueError as e:\n"
                    "    assert type(e) is ValueError and str(e) == 'bad'\nelse:\n"
                    "    raise AssertionError('none')\n", "pass"),
    "key_error_args": ("try:\n    raise_it('KeyError', 'k')\nexcept KeyError as e:\n    assert e.args == ('k',)\n"
                       "else:\n    raise AssertionError('none')\n", "pass"),
    "pytest_raises": ("import pytest\nwith pytest.raises(ValueError, match='bad'):\n    raise_it('ValueError', 'bad')\n"
                      "with pytest.raises(KeyError):\n    raise_it('KeyError')\n"
                      "with pytest.raises(RuntimeError, match='StopIteration'):\n    stop_at(5)\n", "pass"),
    "zero_division": ("try:\n    raise_it('ZeroDivisionError')\nexcept ArithmeticError:\n    pass\n", "pass"),
    "sly_is_plain": ("try:\n    raise_it('sly')\nexcept ValueError as e:\n"
                     "    assert type(e) is ValueError and e != 1 and str(e) == 'sly' and e.__hash__ is not "
                     "None\n", "pass"),
    # control flow: never the test's own loop end, assertion, exit or skip
    "stop_in_map": ("assert all(map(lambda x: stop_at(x) == x, range(5)))\n", "error"),
    "stop_in_for": ("class It:\n    def __init__(self):\n        self.i = 0\n    def __iter__(self):\n"
                    "        return self\n"
                    "    def __next__(self):\n        self.i += 1\n        return stop_at(self.i)\n"
                    "seen = [x for x, _ in zip(It(), range(5))]\nassert seen == [1]\n", "error"),
    "stop_is_runtime": ("try:\n    stop_at(3)\nexcept RuntimeError as e:\n"
                        "    assert type(e).__name__ == 'CandidateRaisedStopIteration' and 'StopIteration' in "
                        "str(e)\n", "pass"),
    "assertion_is_error_not_fail": ("raise_it('AssertionError', 'pass')\n", "error"),
    "assertion_not_caught_as_own": ("try:\n    raise_it('AssertionError', 'x')\n    ok = False\n"
                                    "except AssertionError:\n"
                                    "    ok = True\nassert ok\n", "error"),
    "stop_async": ("try:\n    raise_it('StopAsyncIteration')\nexcept StopAsyncIteration:\n    pass\n", "error"),
    "skip_outcome": ("try:\n    raise_it('pytest_skip')\nexcept RuntimeError as e:\n"
                     "    assert 'BaseException' in type(e).__name__\n", "pass"),
    "exit_caught": ("try:\n    raise_it('SystemExit')\nexcept BaseException:\n    pass\n", "error"),
    "keyboard_caught": ("try:\n    raise_it('KeyboardInterrupt')\nexcept Exception:\n    pass\n", "error"),
    "group": ("try:\n    raise_it('group')\nexcept RuntimeError:\n    pass\n", "pass"),
    # the test's own failure inside a callback cannot be swallowed by the candidate
    "callback_assert": ("def cb(x):\n    assert x > 0, 'negative'\nassert swallow(cb, -1) == 'ok'\n", "fail"),
    "callback_base": ("class Out(BaseException):\n    pass\ndef cb():\n    raise Out('stop')\n"
                      "assert swallow(cb) == 'ok'\n", "fail"),
    "callback_value_error_is_fine": ("def cb():\n    raise ValueError('db down')\n"
                                     "assert swallow(cb) == 'ok'\n", "pass"),
}


def test_exceptions_keep_their_meaning_over_the_channel():
    cases = [{"candidate": EXC_CANDIDATE, "test": {"kind": "assert", "code": code}} for code, _ in EXC_TESTS.values()]
    got = {name: v for name, v in zip(EXC_TESTS, run_cases(cases))}
    wrong = {n: got[n] for n, (_, want) in EXC_TESTS.items() if got[n]["outcome"] != want}
    assert wrong == {}, wrong
    assert "SystemExit" in got["exit_caught"]["message"]
    assert "CandidateRaisedAssertionError" in got["assertion_is_error_not_fail"]["message"]
    assert "negative" in got["callback_assert"]["message"]


def test_crossed_classes_are_runtime_errors_naming_the_original():
    for name in ("StopIteration", "StopAsyncIteration", "GeneratorExit", "SystemExit", "KeyboardInterrupt",
                 "BaseException", "AssertionError", "NoSuchName"):
        assert rpc.has_control_flow(name)
    for name in ("ValueError", "KeyError", "TypeError", "Exception", "OSError", "RecursionError"):
        assert not rpc.has_control_flow(name)
    cls = rpc.crossed("CandidateRaised", "StopIteration")
    assert issubclass(cls, RuntimeError) and cls.__name__ == "CandidateRaisedStopIteration"
    assert issubclass(rpc.crossed("CandidateRaised", "SystemExit"), rpc.BoundaryError)


# -- arguments written back --------------------------------------------------------------------
MUT_CANDIDATE = '''
def sort_in_place(xs):
    xs.sort()

def fill(d, s, b):
    d["added"] = [1]
    d["inner"].append(2)
    del d["gone"]
    s.add(3)
    s.discard(0)
    b[0] = 65
    b.extend(b"!")

def twice(a, b):
    a.append("a")
    b.append("b")

def in_tuple(t):
    t[0].append("x")
    t[1]["k"] = "v"

def keyword(*, into):
    into.extend([7, 8])

def fail_after(xs):
    xs.append("before")
    raise ValueError("after")

def smuggle(xs):
    class Mine:
        pass
    xs.append(Mine())

def smuggle_gen(xs):
    xs.append(x for x in range(3))

def keep_handle(xs):
    xs.reverse()

def grow(tree):
    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
            v.append(0)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
            v["n"] = len(v)
    walk(tree)
'''

MUT_TESTS = {
    "list": "xs = [3, 1, 2]\nalias = xs\nsort_in_place(xs)\nassert xs == [1, 2, 3] and alias is xs\n",
    "dict_set_bytearray": ("inner = [1]\nd = {'inner': inner, 'gone': 0}\ns = {0, 1}\nb = bytearray(b'abc')\n"
                           "fill(d, s, b)\nassert d == {'inner': [1, 2], 'added': [1]} and d['inner'] is inner\n"
                           "assert list(d) == ['inner', 'added']\nassert s == {1, 3}\n"
                           "assert b == bytearray(b'Abc!')\n"),
    "aliasing": "xs = []\ntwice(xs, xs)\nassert xs == ['a', 'b'], xs\n",
    "tuple_holds_lists": "l, m = [], {}\nin_tuple((l, m))\nassert l == ['x'] and m == {'k': 'v'}\n",
    "keyword": "out = [6]\nkeyword(into=out)\nassert out == [6, 7, 8]\n",
    "mutation_before_raise": ("xs = []\ntry:\n    fail_after(xs)\nexcept ValueError:\n    pass\n"
                              "assert xs == ['before']\n"),
    "test_objects_stay_themselves": ("class Conn:\n    def q(self):\n        return 1\nc = Conn()\nxs = [c, 5]\n"
                                     "keep_handle(xs)\nassert xs[0] == 5 and xs[1] is c\n"),
    "no_new_handles": "xs = []\nsmuggle(xs)\n",
    "no_generators": "xs = []\nsmuggle_gen(xs)\n",
}
MUT_WANT = {"no_new_handles": "error", "no_generators": "error"}


def test_container_arguments_are_written_back_with_plain_data_only():
    cases = [{"candidate": MUT_CANDIDATE, "test": {"kind": "assert", "code": code}} for code in MUT_TESTS.values()]
    got = {name: v for name, v in zip(MUT_TESTS, run_cases(cases))}
    wrong = {n: got[n] for n in MUT_TESTS if got[n]["outcome"] != MUT_WANT.get(n, "pass")}
    assert wrong == {}, wrong
    assert "plain data only" in got["no_new_handles"]["message"]
    assert "cross back" in got["no_generators"]["message"]


FORGE_WRITE_BACK = '''
import sys
rpc = next(m for n, m in sys.modules.items() if n.rsplit(".", 1)[-1] == "rpc")
def _forge(self, message, called, reply):
    reply["out"] = [[0, [{"h": 1, "o": "t", "k": "callable"}, {"h": 99, "o": "c", "k": "object"}]]]
rpc.Peer._add_write_back = _forge
def f(xs, helper):
    return 1
'''


def test_a_forged_write_back_cannot_plant_handles():
    verdict = run_one(FORGE_WRITE_BACK, "def helper():\n    return 'secret'\nxs = []\nf(xs, helper)\nassert xs == []\n")
    assert verdict["outcome"] == "error" and "plain data only" in verdict["message"], verdict


trees = st.recursive(st.integers(-5, 5) | st.text(max_size=3),
                     lambda inner: (st.lists(inner, max_size=3)
                                    | st.dictionaries(st.text(max_size=2), inner, max_size=3)),
                     max_leaves=12)


def _grow(v):
    if isinstance(v, list):
        for x in v:
            _grow(x)
        v.append(0)
    elif isinstance(v, dict):
        for x in v.values():
            _grow(x)
        v["n"] = len(v)


@settings(max_examples=examples(20), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(trees, max_size=3) | st.dictionaries(st.text(max_size=2), trees, max_size=3),
                min_size=5, max_size=5))
def test_nested_mutation_is_seen_by_the_test(values):
    cases = []
    for value in values:
        want = __import__("copy").deepcopy(value)
        _grow(want)
        code = (f"tree = {value!r}\nkeep = tree\ngrow(tree)\nassert keep is tree\n"
                f"assert tree == {want!r}, tree\n")
        cases.append({"candidate": MUT_CANDIDATE, "test": {"kind": "assert", "code": code}})
    for case, verdict in zip(cases, run_cases(cases)):
        assert verdict["outcome"] == "pass", (verdict, case["test"]["code"])


# -- the same through the real sandbox, on every backend -----------------------------------------

def _outcomes(result, cid: str) -> dict[str, tuple[str, str]]:
    return {t["name"]: (t["outcome"], t["message"]) for t in result.candidate(cid).details["tests"]}


@pytest.mark.sandbox
@pytest.mark.slow
@on_each_backend
def test_sandboxed_channel_keeps_test_values_exceptions_and_arguments(backend):
    everything = {n: ("value" if i % 3 == 0 else "function" if i % 3 == 1 else "class", "none")
                  for i, n in enumerate(POOL)}
    cand, code, _ = _case(everything, "tok-sandboxed", [])
    tests = [{"kind": "assert", "name": "no_leak", "code": code}]
    sandboxed = {n: v for n, v in EXC_TESTS.items() if n != "pytest_raises"}  # no pytest in the sandbox
    tests += [{"kind": "assert", "name": f"exc_{n}", "code": c} for n, (c, _) in sandboxed.items()]
    tests += [{"kind": "assert", "name": f"mut_{n}", "code": c} for n, c in MUT_TESTS.items()]
    task = Task(id="channel", prompt="SLOT = None\nexpected = None\n", language="python", entry_point="probe",
                tests=tests)
    result = _evaluate(backend, task, [Trajectory(id="c", code=cand + EXC_CANDIDATE + MUT_CANDIDATE)])
    got = _outcomes(result, "c")
    want = {"no_leak": "pass", **{f"exc_{n}": w for n, (_, w) in sandboxed.items()},
            **{f"mut_{n}": MUT_WANT.get(n, "pass") for n in MUT_TESTS}}
    assert {n: got[n][0] for n in want} == want, got


@pytest.mark.slow
@pytest.mark.sandbox
@settings(max_examples=examples(20), derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(scenarios, tokens, st.lists(st.sampled_from(POOL), max_size=3)), min_size=5, max_size=5))
def test_sandboxed_name_sets_never_leak(batch):
    """Each example is one task of five tests (a name set each) and a candidate per test."""
    tests, trajectories = [], []
    declared: set[str] = set()
    for i, (scenario, token, names) in enumerate(batch):
        cand, code, _ = _case(scenario, token, [])
        declared.update(names)
        tests.append({"kind": "assert", "name": f"set{i}", "code": code})
        trajectories.append(Trajectory(id=f"c{i}", code=cand))
    task = Task(id="names", prompt=prompt_source(sorted(declared)), language="python", entry_point="probe",
                tests=tests)
    result = _evaluate(strongest_backend(), task, trajectories)
    assert result.status.value == "ok", result.error
    for i in range(len(batch)):  # every candidate against every name set
        for name, (outcome, message) in _outcomes(result, f"c{i}").items():
            assert outcome == "pass", (i, name, message)


JS_CANDIDATE = r'''
var EXPECTED = null;
var want = null;
function reference() { return 'mine'; }
function helper() { return 'mine'; }
function probe() {
  const found = [];
  for (const name of ['EXPECTED', 'want', 'reference', 'helper', 'check', 'SECRET']) {
    let v;
    try { v = globalThis[name]; } catch (e) { continue; }
    for (const attempt of [() => v, () => v(), () => v(1)]) {
      try { if (String(attempt()).includes('tok-')) { found.push(name); break; } } catch (e) { /* nothing */ }
    }
  }
  return found;
}
function fails() { const e = new Error('pass'); e.code = 'ERR_ASSERTION'; e.name = 'AssertionError'; throw e; }
function typeFails() { throw new TypeError('bad type'); }
function swallow(fn) { try { fn(-1); } catch (e) { /* swallowed */ } return 'ok'; }
function check(candidate) { return undefined; }
'''
JS_TESTS = [
    {"kind": "assert", "name": "no_leak",
     "code": "var EXPECTED = 'tok-js'; var want = ['tok-js']; var SECRET = 'tok-js';\n"
             "function reference() { return SECRET; }\nfunction helper() { return SECRET; }\n"
             "assert.deepStrictEqual(probe(), []);\nassert.strictEqual(EXPECTED, 'tok-js');"},
    {"kind": "assert", "name": "type_kept", "code": "assert.throws(() => typeFails(), TypeError);"},
    {"kind": "assert", "name": "assertion_is_error", "code": "fails();"},
    {"kind": "assert", "name": "assertion_not_own",
     "code": "let own = false;\ntry { fails(); } catch (e) { own = e instanceof assert.AssertionError; }\n"
             "assert.ok(own);"},
    {"kind": "assert", "name": "callback_assert",
     "code": "assert.strictEqual(swallow((x) => assert.ok(x > 0, 'negative')), 'ok');"},
    {"kind": "check", "name": "no_check_of_ours", "code": "const unrelated = 1;"},
]
JS_WANT = {"no_leak": "pass", "type_kept": "pass", "assertion_is_error": "error", "assertion_not_own": "fail",
           "callback_assert": "fail", "no_check_of_ours": "error"}


@pytest.mark.sandbox
@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="node not installed")
@on_each_backend
def test_javascript_keeps_test_values_and_exception_meaning(backend):
    task = Task(id="js-channel", prompt="", language="javascript", entry_point="probe", tests=JS_TESTS)
    result = _evaluate(backend, task, [Trajectory(id="c", code=JS_CANDIDATE)])
    got = _outcomes(result, "c")
    assert {n: got[n][0] for n in JS_WANT} == JS_WANT, got
    assert "CandidateRaisedAssertionError" in got["assertion_is_error"][1]
    assert "negative" in got["callback_assert"][1]
