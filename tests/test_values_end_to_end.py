"""Values keep their meaning through a real ``call`` test in the sandbox, on every backend here: a
JavaScript candidate returning -0, NaN, Infinity, a BigInt or undefined gets the verdict the
comparison rules give (the value crosses candidate -> test process -> host), and a JavaScript
test sees the candidate's value with its JavaScript type (candidate -> test process). Python
candidates: huge ints, -0.0, NaN, bools and complex against int expectations."""

from __future__ import annotations

import math
import shutil

import pytest

from oracle.tasks.task import Task, Trajectory
from oracle.results.result import Status
from tests.plugins.sandbox_backends import on_each_backend
from tests.test_verdict_integrity import _evaluate

pytestmark = pytest.mark.sandbox

JS_CALLS = [
    ("neg_zero", "negZero()", -0.0), ("nan", "nan()", math.nan), ("inf", "inf()", math.inf),
    ("neg_inf", "negInf()", -math.inf), ("big", "big()", 2**70 + 1), ("undef_is_not_null", "undef()", None),
    ("five", "five()", 5),
]
JS_ASSERTS = [
    ("sees_neg_zero", "assert.ok(Object.is(negZero(), -0));"),
    ("sees_bigint", "assert.strictEqual(typeof five(), 'bigint'); assert.strictEqual(big(), 2n ** 70n + 1n);"),
    ("sees_undefined", "assert.strictEqual(undef(), undefined);"),
    ("sees_nan_and_inf", "assert.ok(Number.isNaN(nan())); assert.strictEqual(inf(), Infinity); "
                         "assert.strictEqual(negInf(), -Infinity);"),
]
JS_TASK = Task(id="js-values", prompt="", language="javascript", entry_point="five", tests=(
    [{"kind": "call", "name": n, "call": c, "expected": e, "timeout_s": 5} for n, c, e in JS_CALLS]
    + [{"kind": "assert", "name": n, "code": c, "timeout_s": 5} for n, c in JS_ASSERTS]
    + [{"kind": "call", "name": "symbol", "call": "sym()", "expected": None, "timeout_s": 5}]))

HONEST_JS = ("function negZero() { return -0; }\nfunction nan() { return 0 / 0; }\n"
             "function inf() { return 1 / 0; }\nfunction negInf() { return -1 / 0; }\n"
             "function big() { return 2n ** 70n + 1n; }\nfunction undef() { return undefined; }\n"
             "function five() { return 5n; }\nfunction sym() { return Symbol('s'); }\n")
# Each wrong candidate differs from the honest one in one value; (the tests it must fail).
WRONG_JS = {
    "positive_zero": (HONEST_JS.replace("return -0;", "return 0;"), {"sees_neg_zero"}),
    "null_for_nan": (HONEST_JS.replace("return 0 / 0;", "return null;"), {"nan", "sees_nan_and_inf"}),
    "huge_for_inf": (HONEST_JS.replace("return 1 / 0;", "return 1.7976931348623157e308;"), {"inf", "sees_nan_and_inf"}),
    "inf_for_neg_inf": (HONEST_JS.replace("return -1 / 0;", "return 1 / 0;"), {"neg_inf", "sees_nan_and_inf"}),
    "number_for_bigint": (HONEST_JS.replace("return 2n ** 70n + 1n;", "return 2 ** 70 + 1;"), {"big", "sees_bigint"}),
    "number_five": (HONEST_JS.replace("return 5n;", "return 5;"), {"sees_bigint"}),
    "null_for_undefined": (HONEST_JS.replace("return undefined;", "return null;"), {"sees_undefined"}),
    "string_five": (HONEST_JS.replace("return 5n;", "return '5';"), {"five", "sees_bigint"}),
    "bool_for_five": (HONEST_JS.replace("return 5n;", "return true;"), {"five", "sees_bigint"}),
}


def _outcomes(result, name):
    return {t["name"]: (t["outcome"], t["message"]) for t in result.candidate(name).details["tests"]}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
@on_each_backend
def test_javascript_values_get_the_right_verdict(backend):
    trajectories = [Trajectory(id="honest", code=HONEST_JS)]
    trajectories += [Trajectory(id=n, code=c) for n, (c, _) in WRONG_JS.items()]
    result = _evaluate(backend, JS_TASK, trajectories)
    honest = _outcomes(result, "honest")
    # undefined is not null: the call test expecting null fails, naming both
    assert honest.pop("undef_is_not_null") == ("fail", "undef(): expected None, got undefined (undefined, not None)")
    outcome, message = honest.pop("symbol")
    assert outcome == "error" and "Symbol cannot cross" in message
    assert {n: o for n, (o, _) in honest.items()} == {n: "pass" for n in honest}, honest
    for name, (_, must_fail) in WRONG_JS.items():
        got = _outcomes(result, name)
        failed = {n for n, (o, _) in got.items() if o != "pass"} - {"undef_is_not_null", "symbol"}
        assert failed == must_fail, (name, got)
    assert "got 1.1805916207174113e+21" in _outcomes(result, "number_for_bigint")["big"][1]


PY_TASK = Task(id="py-values", prompt="", language="python", entry_point="f", tests=[
    {"kind": "call", "name": "huge", "call": "huge()", "expected": 10**400 + 1},
    {"kind": "call", "name": "huge_vs_float", "call": "huge()", "expected": 1e308},
    {"kind": "call", "name": "neg_zero", "call": "neg_zero()", "expected": -0.0},
    {"kind": "call", "name": "nan", "call": "nan()", "expected": math.nan},
    {"kind": "call", "name": "int_exact", "call": "three()", "expected": 3, "tolerance": 0},
    {"kind": "call", "name": "int_tolerant", "call": "three()", "expected": 3},
    {"kind": "call", "name": "keys", "call": "keys()", "expected": {"1": "a", "2": "b"}},
])
HONEST_PY = ("def huge():\n    return 10**400 + 1\ndef neg_zero():\n    return -0.0\n"
             "def nan():\n    return float('nan')\ndef three():\n    return 3\ndef keys():\n"
             "    return {1: 'a', 2: 'b'}\n")
WRONG_PY = {  # (code, outcome per test that is not a pass)
    "bool_and_complex": ("def huge():\n    return True\ndef neg_zero():\n    return 0j\ndef nan():\n    return None\n"
                         "def three():\n    return 3+0j\ndef keys():\n    return {1: 'a', '1': 'a', 2: 'b'}\n",
                         {"huge", "huge_vs_float", "neg_zero", "nan", "int_exact", "int_tolerant", "keys"}),
    "float_three": (HONEST_PY.replace("return 3\n", "return 3.0\n").replace("10**400 + 1", "10**400"),
                    {"huge", "huge_vs_float", "int_exact"}),
}


@pytest.mark.slow
@on_each_backend
def test_python_values_get_the_right_verdict(backend):
    trajectories = [Trajectory(id="honest", code=HONEST_PY)]
    trajectories += [Trajectory(id=n, code=c) for n, (c, _) in WRONG_PY.items()]
    result = _evaluate(backend, PY_TASK, trajectories)
    assert result.status is Status.ok, result.error
    honest = _outcomes(result, "honest")
    assert honest.pop("huge_vs_float")[0] == "fail"  # a huge int is compared exactly, never overflowing float()
    assert {n: o for n, (o, _) in honest.items()} == {n: "pass" for n in honest}, honest
    for name, (_, must_fail) in WRONG_PY.items():
        got = _outcomes(result, name)
        assert {n for n, (o, _) in got.items() if o != "pass"} == must_fail, (name, got)
        assert all(o == "fail" for o, _ in got.values() if o != "pass"), got
    assert "a float, not an int" in _outcomes(result, "float_three")["int_exact"][1]
