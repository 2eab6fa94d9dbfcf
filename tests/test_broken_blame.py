"""runtime/blame.py: an exception raised before any request is the test's own only when the test
could not have read anything a candidate supplies by then. Run here on real exceptions from real
test code (the same compile, exec and frames as on the test side), without a sandbox."""

from __future__ import annotations

import pytest

from oracle.sandbox.runtime.blame import Scene


def _raise(code: str, ns: dict | None = None, mode: str = "exec") -> BaseException:
    ns = {} if ns is None else ns
    try:
        if mode == "eval":
            eval(compile(code, "<test>", "eval"), ns)
        else:
            exec(compile(code, "<test>", "exec"), ns)  # noqa: S102 - the blame rule is tested on the code it reads
    except BaseException as exc:  # noqa: BLE001 - the exception is what is tested
        return exc
    raise AssertionError("the code did not raise")


def fault(code: str, *, entry: str = "f", prompt: str | None = None, ns: dict | None = None,
          mode: str = "exec") -> bool:
    names: set[str] = set()
    namespace = dict(ns or {})
    if prompt:
        exec(compile(prompt, "<prompt>", "exec"), namespace)  # noqa: S102 - the blame rule is tested on the code it reads
        names = {n for n in namespace if not n.startswith("__")}
    scene = Scene(code, mode=mode, entry_point=entry, prompt_names=names, prompt_code=prompt)
    return scene.test_fault(_raise(code, namespace, mode))


TEST_FAULTS = {
    "a missing module": "import not_installed_module_xyz\n",
    "after imports and data": "import json\nDATA = [1]\nx = json.loads('{')\n",
    "in a helper it defines": "def load():\n    return int('x')\nload()\n",
    "a nested helper and a comprehension": "def load():\n    def inner(v):\n        return [int(c) for c in v]\n"
                                           "    return inner('x')\nload()\n",
    "a lambda reading only its argument": "g = lambda v: int(v)\ng('x')\n",
    "a class of its own": "class Fixture:\n    def __init__(self):\n        self.v = int('x')\nFixture()\n",
    "before the first use of the candidate": "x = int('x')\nassert f(x) == 1\n",
    "an unused prompt helper": "x = int('x')\n",
}


@pytest.mark.parametrize("code", list(TEST_FAULTS.values()), ids=list(TEST_FAULTS))
def test_an_exception_that_cannot_involve_the_candidate_is_the_tests(code):
    assert fault(code)


CANDIDATE_MAYBE = {
    "calls the entry point": ("f(1)\n", {"f": 5}),
    "reads a name before binding it": ("x = CASES + 1\nCASES = 2\n", {"CASES": "a"}),
    "reads a name only a compound statement binds": ("if True:\n    CASES = 1\nCASES + 'x'\n", {}),
    "a helper reading a global": ("def run():\n    return helper(1)\nrun()\n", {"helper": 5}),
    "globals()": ("globals()['f'](1)\n", {"f": 5}),
    "vars()": ("vars()['f'](1)\n", {"f": 5}),
    "exec": ("exec('f(1)')\n", {"f": 5}),
    "sys.modules": ("import sys\nsys.modules['__main__'].f(1)\n", {}),
    "the candidate's module": ("from solution import slugify\n", {}),
    "import __main__": ("import __main__\n__main__.f(1)\n", {}),
}


@pytest.mark.parametrize("code, ns", list(CANDIDATE_MAYBE.values()), ids=list(CANDIDATE_MAYBE))
def test_an_exception_that_may_involve_the_candidate_is_never_the_tests(code, ns):
    assert not fault(code, ns=ns)


def test_a_missing_name_and_an_assertion_are_never_the_tests():
    assert not fault("g_not_defined(1)\n")
    assert not fault("assert 1 == 2\n")
    assert not fault("def h():\n    y = y + 1\nh()\n")  # UnboundLocalError is a NameError


def test_a_prompt_function_that_reaches_the_candidate_counts_as_reading_it():
    prompt = "def helper(x):\n    return f(x)\n"
    assert not fault("helper(1)\n", prompt=prompt, ns={"f": 5})
    assert fault("x = int('x')\n", prompt=prompt)  # not called yet: the prompt's reach does not matter
    clean_prompt = "def double(x):\n    return 2 * x\n"
    assert fault("double(int('x'))\n", prompt=clean_prompt)


def test_a_call_expression():
    assert fault("int('x')", mode="eval")
    assert not fault("f(int('x'))", mode="eval", ns={"f": 5})


def test_the_check_phase_blames_the_test_only_before_it_touches_the_candidate():
    def check_fault(code: str) -> bool:
        ns: dict = {}
        exec(compile(code, "<test>", "exec"), ns)  # noqa: S102 - the blame rule is tested on the code it reads
        try:
            ns["check"]("CANDIDATE")
        except BaseException as exc:  # noqa: BLE001
            scene = Scene(code, mode="exec", entry_point="f", prompt_names=set(), prompt_code=None)
            return scene.check_fault(exc, ns["check"])
        raise AssertionError("check did not raise")

    assert check_fault("def check(candidate):\n    data = int('x')\n    assert candidate(data)\n")
    assert check_fault("import json\nWANT = 1\ndef check(c):\n    x = json.loads('{')\n")
    assert check_fault("def check(a, b):\n    pass\n")  # its signature refuses the call: no candidate part
    assert not check_fault("def check(candidate):\n    candidate + 1\n")
    assert not check_fault("def check(candidate):\n    c = candidate\n    int('x')\n")
    assert not check_fault("def check(candidate):\n    helper(1)\n")  # a global the test never bound
    assert not check_fault("def check(candidate):\n    globals()['x']\n")
