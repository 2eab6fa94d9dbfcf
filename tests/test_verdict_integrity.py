"""Verdict integrity: hostile candidates try to forge their own verdict, on every sandbox backend.

Each task holds one honest candidate and many attackers that do NOT solve the task but try a trick:
reaching the reporter, patching what a harness would rely on, changing what the test compares,
exiting early, printing pass markers, poisoning the channel, leaving things behind. Every attacker
must end with no passing test at all (score 0, no partial credit), and the honest candidate must
keep its verdict in the same task. The classes come from the verdict-integrity issue; the extra ones
(killing the worker, huge or deeply nested answers, handles under implicit JavaScript keys, values
that may not cross) are ours.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.verifier.strategy import VerifierStrategy
from oracle.sandbox.workers import ZYGOTE_MODULE
from tests.plugins.sandbox_backends import on_each_backend, strongest_backend

pytestmark = pytest.mark.sandbox

FAKE_VERDICT = (
    "import json as _j, struct as _s\n"
    "def _frame(m):\n"
    "    b = _j.dumps(m).encode()\n"
    "    return _s.pack('>I', len(b)) + b\n"
    "FRAMES = b''.join(_frame(m) for m in ({'op': 'verdict', 'outcome': 'pass', 'message': 'ok'},\n"
    "    {'op': 'ret', 'id': 1, 'value': [9, 4, 2]}, {'op': 'ready', 'exports': []}))\n"
    "def spray():\n"
    "    import os\n"
    "    for fd in range(0, 12):\n"
    "        try:\n"
    "            os.write(fd, FRAMES)\n"
    "        except OSError:\n"
    "            pass\n"
)
WRONG = "def sort_desc(xs):\n    return list(xs)\n"

PY_ATTACKS = {
    "marker_lines": "import sys\n"
                    "for s in (sys.stdout, sys.stderr):\n"
                    "    print('@@ORACLE 0 {\"kind\": \"pass\"}\\nall tests passed\\n"
                    "PASS', file=s, flush=True)\n" + WRONG,
    "nonce_from_stdin": "import sys\nnonce = sys.stdin.readline().strip()\n"
                        "print('\\n@@ORACLE ' + nonce + ' {\"kind\": \"pass\"}', "
                        "file=sys.stderr, flush=True)\n" + WRONG,
    "reach_the_reporter": "import __main__, gc, sys\n"
                          "def _hunt():\n"
                          "    found = []\n"
                          "    for obj in gc.get_objects():\n"
                          "        if callable(obj) and any(w in getattr(obj, '__name__', '') for w in ('report', "
                          "'verdict', 'send')):\n"
                          "            found.append(obj)\n"
                          "    f = sys._getframe()\n"
                          "    while f is not None:\n"
                          "        found += [v for k, v in f.f_globals.items() if 'report' in k and callable(v)]\n"
                          "        f = f.f_back\n"
                          "    for fn in found:\n"
                          "        for args in (('pass',), ({'op': 'verdict', 'outcome': 'pass'},), ()):\n"
                          "            try:\n"
                          "                fn(*args)\n"
                          "            except BaseException:\n"
                          "                pass\n"
                          "_hunt()\n"
                          "def sort_desc(xs):\n    _hunt()\n    return None\n",
    "fake_frames_on_every_fd": FAKE_VERDICT + "spray()\ndef sort_desc(xs):\n    spray()\n    return xs\n",
    "patch_builtins": "import builtins, os, json, sys\n"
                      "builtins.exec = lambda *a, **k: None\nbuiltins.compile = lambda *a, **k: compile\n"
                      "builtins.sorted = lambda *a, **k: [9, 4, 2]\nbuiltins.abs = lambda x: 0\n"
                      "builtins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 0\n"
                      "class _A(Exception):\n    pass\nbuiltins.AssertionError = _A\n"
                      "json.dumps = lambda *a, **k: '{\"op\": \"verdict\", \"outcome\": \"pass\"}'\n"
                      "sys.exit = lambda *a: None\n_w = os.write\nos.write = lambda fd, b: _w(fd, b)\n" + WRONG,
    "patch_the_runtime": "import sys\n"
                         "for name, mod in list(sys.modules.items()):\n"
                         "    if name.rsplit('.', 1)[-1] in ('wire', 'rpc'):\n"
                         "        for attr in ('encode', 'decode', 'dumps'):\n"
                         "            if hasattr(mod, attr):\n"
                         "                setattr(mod, attr, lambda *a, **k: {'op': 'verdict', 'outcome': "
                         "'pass'})\n" + WRONG,
    "eq_always_true": "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
                      "    def __hash__(self): return 0\n    def __bool__(self): return True\n"
                      "    def __getitem__(self, i): return Any()\n    def __sub__(self, o): return 0\n"
                      "def sort_desc(xs):\n    return Any()\n",
    "subclass_eq": "class L(list):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
                   "class I(int):\n    def __eq__(self, o): return True\n"
                   "def sort_desc(xs):\n    return L([I(0)])\n",
    "shadow_builtins_and_helpers": "sorted = lambda *a, **k: [9, 4, 2]\nabs = lambda x: 0\nlen = lambda x: 0\n"
                                   "isinstance = lambda *a: True\ndef check(candidate):\n    return None\n"
                                   "candidate = None\n" + WRONG,
    "exit_zero_at_load": "import os\nos._exit(0)\n" + WRONG,
    "sys_exit_at_load": "import sys\nsys.exit(0)\n" + WRONG,
    "systemexit_in_function": "def sort_desc(xs):\n    raise SystemExit(0)\n",
    "os_exit_in_function": "import os\ndef sort_desc(xs):\n    os._exit(0)\n",
    "atexit_hook": FAKE_VERDICT + "import atexit\natexit.register(spray)\n" + WRONG,
    "forked_writer_after_exit": FAKE_VERDICT + "import os, time\n"
                                "def sort_desc(xs):\n"
                                "    if os.fork() == 0:\n"
                                "        os.setsid()\n"
                                "        time.sleep(0.2)\n"
                                "        spray()\n"
                                "        os._exit(0)\n"
                                "    os._exit(0)\n",
    "kill_the_worker": "import os, signal\ndef sort_desc(xs):\n"
                       "    for pid in (os.getppid(), -1):\n"
                       "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n"
                       "            pass\n"
                       "    return xs\n",
    "poison_with_invalid_utf8": "import os\nos.write(3, b'\\x00\\x00\\x00\\x04\\xff\\xfe\\xfd\\xfc')\n" + WRONG,
    "poison_with_bad_json": "import os\nbody = b'{\"op\": \"verdict\", \"outcome\": pass'\n"
                            "os.write(3, len(body).to_bytes(4, 'big') + body)\n" + WRONG,
    "huge_answer": "def sort_desc(xs):\n    return 'x' * (40 << 20)\n",
    "deeply_nested_answer": "def sort_desc(xs):\n    v = []\n    for _ in range(5000):\n        v = [v]\n"
                            "    return v\n",
    "generator_answer": "def sort_desc(xs):\n    return (x for x in sorted(xs, reverse=True))\n",
    "read_the_zygote": "import os\ndef sort_desc(xs):\n"
                       "    for path in ('/proc/%d/mem' % os.getppid(), '/proc/%d/environ' % os.getppid()):\n"
                       "        try:\n            open(path, 'rb').read(64)\n        except OSError:\n"
                       "            pass\n"
                       "    return xs\n",
}

PY_TASK = Task(
    id="sort-desc", prompt="def sort_desc(xs):\n    \"\"\"Return xs sorted in descending order.\"\"\"\n",
    entry_point="sort_desc", language="python",
    tests=[
        {"kind": "check", "name": "check", "timeout_s": 8,
         "code": "def check(candidate):\n    assert candidate([3, 1, 2]) == [3, 2, 1]\n"
                 "    assert sorted(candidate([5, 4])) == [4, 5]\n    assert abs(candidate([1])[0] - 1) < 1e-9\n"
                 "    assert isinstance(candidate([]), list) and len(candidate([7, 8])) == 2\n"},
        {"kind": "call", "name": "call", "call": "sort_desc([2, 9, 4])", "expected": [9, 4, 2], "timeout_s": 8},
        {"kind": "assert", "name": "assert", "timeout_s": 8,
         "code": "assert sort_desc([1, 2]) == [2, 1]\nassert sort_desc((3, 5)) == [5, 3]\n"},
        {"kind": "assert", "name": "catches_everything", "timeout_s": 8,
         "code": "try:\n    got = sort_desc([2, 1])\nexcept BaseException:\n    got = [2, 1]\nassert got == [2, 1]\n"
                 "assert sort_desc([1, 3]) == [3, 1]\n"},
    ])
HONEST_PY = "def sort_desc(xs):\n    return sorted(xs, reverse=True)\n"


def _evaluate(backend: str, task: Task, trajectories: list[Trajectory], **verifier):
    config = OracleConfig(verifier={"backend": backend, "timeout_s": 8, "workers": 2, **verifier})
    strategy = VerifierStrategy()
    try:
        return asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                               config=config)))
    finally:
        strategy.close()


def _assert_attackers_get_nothing(result, attackers, honest: str) -> None:
    assert result.status is Status.ok, result.error
    assert result.candidate(honest).passed is True, result.candidate(honest).details
    assert result.candidate(honest).score == 1.0
    forged = {}
    for name in attackers:
        c = result.candidate(name)
        passing = [t["name"] for t in c.details["tests"] if t["outcome"] == "pass"]
        if c.passed or c.score != 0.0 or passing:
            forged[name] = (c.score, passing, c.details.get("summary"))
    assert forged == {}, forged
    assert result.best == [honest]
    assert all(t["integrity"] == "isolated" for c in result.candidates for t in c.details["tests"])
    assert result.provenance.integrity == "isolated"


@pytest.mark.slow
@on_each_backend
def test_python_attackers_cannot_forge_a_verdict(backend):
    trajectories = [Trajectory(id=name, code=code) for name, code in PY_ATTACKS.items()]
    trajectories.insert(len(trajectories) // 2, Trajectory(id="honest", code=HONEST_PY))
    result = _evaluate(backend, PY_TASK, trajectories)
    _assert_attackers_get_nothing(result, PY_ATTACKS, "honest")
    messages = {c.id: c.details["summary"] for c in result.candidates if c.id != "honest"}
    assert "cannot cross" in messages["generator_answer"]
    assert "SystemExit" in messages["systemexit_in_function"]


PY_IO_TASK = Task(id="sum-io", prompt="Read two integers, print their sum.", language="python",
                  tests=[{"kind": "io", "stdin": "3 4\n", "stdout": "7\n"},
                         {"kind": "io", "stdin": "10 -2\n", "stdout": "8\n"}])
PY_IO_ATTACKS = {
    "pass_markers": "import sys\nprint('@@ORACLE x {\"kind\": \"done\"}', file=sys.stderr)\n"
                    "print('all tests passed')\n",
    "exit_before_output": "import os\nos._exit(0)\n",
    "frames_and_exit": FAKE_VERDICT + "spray()\nimport os\nos._exit(0)\n",
    "nonzero_exit_after_answer": "a, b = map(int, input().split())\nprint(a + b, flush=True)\nimport os\nos._exit(3)\n",
}


@pytest.mark.slow
@on_each_backend
def test_io_attackers_cannot_forge_a_verdict(backend):
    trajectories = [Trajectory(id=n, code=c) for n, c in PY_IO_ATTACKS.items()]
    trajectories.append(Trajectory(id="honest", code="a, b = map(int, input().split())\nprint(a + b)\n"))
    result = _evaluate(backend, PY_IO_TASK, trajectories)
    _assert_attackers_get_nothing(result, PY_IO_ATTACKS, "honest")


JS_FRAMES = ("const fs = require('fs');\nfunction frame(m) { const b = Buffer.from(JSON.stringify(m));"
             " const h = Buffer.alloc(4); h.writeUInt32BE(b.length); return Buffer.concat([h, b]); }\n"
             "function spray() { for (let fd = 0; fd < 12; fd++) { try { fs.writeSync(fd, frame({op: 'verdict', "
             "outcome: 'pass'})); } catch (e) {} } }\n")
JS_WRONG = "function sortDesc(xs) { return xs; }\n"
JS_ATTACKS = {
    "marker_lines": "console.log('@@ORACLE 0 {\"kind\":\"pass\"}'); console.error('all tests passed');\n" + JS_WRONG,
    "process_exit_at_load": "process.exit(0);\n" + JS_WRONG,
    "process_exit_in_function": "function sortDesc(xs) { process.exit(0); }\n",
    "fake_frames": JS_FRAMES + "spray();\nfunction sortDesc(xs) { spray(); return xs; }\n",
    "patch_globals": "JSON.stringify = () => '{\"op\":\"verdict\",\"outcome\":\"pass\"}';\n"
                     "require('fs').writeSync = () => 0; require('vm').runInThisContext = () => undefined;\n"
                     "require('assert').deepStrictEqual = () => {}; require('assert').strictEqual = () => {};\n"
                     "Array.prototype.toString = () => '9,4,2';\n" + JS_WRONG,
    "value_of_object": "function sortDesc(xs) { return { valueOf() { return 2; }, "
                       "toString() { return '2'; }, 0: 9 }; }\n",
    "array_of_value_of": "function sortDesc(xs) { return [{ valueOf() { return 9; } }, 4, 2]; }\n",
    "throws_assertion_pass": "function sortDesc(xs) { const e = new Error('pass'); "
                             "e.code = 'ERR_ASSERTION'; throw e; }\n",
    "promise_answer": "async function sortDesc(xs) { return xs.slice().sort((a, b) => b - a); }\n",
    "poison_channel": "require('fs').writeSync(3, Buffer.from([0, 0, 0, 3, 0xff, 0xfe, 0xfd]));\n" + JS_WRONG,
}
JS_TASK = Task(
    id="sort-desc-js", prompt="Write sortDesc(xs): xs sorted in descending order.", language="javascript",
    entry_point="sortDesc",
    tests=[
        {"kind": "assert", "name": "deep", "code": "assert.deepStrictEqual(sortDesc([3, 1, 2]), [3, 2, 1]);"},
        {"kind": "assert", "name": "loose", "code": "assert.ok(sortDesc([1, 2])[0] == 2); "
                                                    "assert.equal(String(sortDesc([9, 4, 2])), '9,4,2');"},
        {"kind": "call", "name": "call", "call": "sortDesc([2, 9, 4])", "expected": [9, 4, 2]},
        {"kind": "check", "name": "check", "code": "function check(c) { assert.deepStrictEqual(c([5, 7]), [7, 5]); }"},
    ])


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
@pytest.mark.slow  # about 8 s a backend
@on_each_backend
def test_javascript_attackers_cannot_forge_a_verdict(backend):
    trajectories = [Trajectory(id=n, code=c) for n, c in JS_ATTACKS.items()]
    honest = "function sortDesc(xs) { return xs.slice().sort((a, b) => b - a); }\n"
    trajectories.append(Trajectory(id="honest", code=honest))
    result = _evaluate(backend, JS_TASK, trajectories, timeout_s=3)
    _assert_attackers_get_nothing(result, JS_ATTACKS, "honest")


LEAVE_AND_LOOK = r'''
import ctypes, os, threading, time
TOKEN = "oracle-leftover"
PLACES = [os.getcwd(), os.environ.get("HOME", "."), os.path.dirname(os.getcwd()), "/tmp", "/dev/shm"]
STATE = {"ran": False}

def leave():
    STATE["ran"] = True
    for place in PLACES:
        try:
            with open(os.path.join(place, TOKEN), "w") as fh:
                fh.write("left")
        except OSError:
            pass
    threading.Thread(target=lambda: time.sleep(60), name=TOKEN, daemon=False).start()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, TOKEN.encode(), 0, 0, 0)  # PR_SET_NAME
            time.sleep(60)
        os._exit(0)
    return "left"

def look():
    found = []
    if STATE["ran"]:
        found.append("module state")
    for place in PLACES:
        if os.path.exists(os.path.join(place, TOKEN)):
            found.append("file in " + place)
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/comm" % pid) as fh:
                if fh.read().strip() == TOKEN[:15]:
                    found.append("process %s" % pid)
        except OSError:
            pass
    return found or "clean"
'''


@on_each_backend
def test_no_file_thread_or_daemon_reaches_the_next_run(backend):
    task = Task(id="leftovers", prompt="", language="python", entry_point="look", tests=[
        {"kind": "call", "name": "leave", "call": "leave()", "expected": "left"},
        {"kind": "call", "name": "look", "call": "look()", "expected": "clean"},
        {"kind": "call", "name": "leave_again", "call": "leave()", "expected": "left"},
        {"kind": "call", "name": "look_again", "call": "look()", "expected": "clean"}])
    # One worker pair: every run follows the previous one in the same sandbox.
    result = _evaluate(backend, task, [Trajectory(id="first", code=LEAVE_AND_LOOK),
                                       Trajectory(id="second", code=LEAVE_AND_LOOK)], workers=1)
    assert result.status is Status.ok, result.error
    for c in result.candidates:
        assert [t["outcome"] for t in c.details["tests"]] == ["pass"] * 4, c.details["tests"]


@pytest.mark.slow
def test_a_candidate_sees_a_narrow_handle_not_the_counter(tmp_path):
    """N+1 style: the test keeps the real connection; the candidate cannot switch the counter off."""
    import json
    from pathlib import Path
    data = json.loads((Path(__file__).resolve().parents[1] / "examples" / "n_plus_one" / "task.json").read_text())
    task = Task.model_validate(data["task"])
    cache = next(t for t in data["trajectories"] if t["id"] == "lru_cache")["code"]
    sneaky = {
        "private_attr": cache.replace("def get_orders_with_items(user_id):\n",
                                      "def get_orders_with_items(user_id):\n    CONN._conn.set_trace_callback(None)\n"),
        "dunder_walk": cache.replace("def get_orders_with_items(user_id):\n",
                                     "def get_orders_with_items(user_id):\n"
                                     "    CONN.execute.__self__._conn.set_trace_callback(None)\n"),
    }
    trajectories = [Trajectory(id=k, code=v) for k, v in sneaky.items()]
    trajectories.append(Trajectory(id="join", code=next(t for t in data["trajectories"] if t["id"] == "join")["code"]))
    result = _evaluate(strongest_backend(), task, trajectories)
    assert result.candidate("join").passed is True
    for name in sneaky:
        assert result.candidate(name).passed is False
        counted = [t for t in result.candidate(name).details["tests"] if t["name"].startswith("constant_queries")]
        assert all(t["outcome"] != "pass" for t in counted), counted


@pytest.mark.slow
def test_in_process_mode_needs_both_opt_ins_and_is_labelled():
    task = PY_TASK.model_copy(update={"execution": "in_process"})
    trajectories = [Trajectory(id="honest", code=HONEST_PY)]
    refused = _evaluate(strongest_backend(), task, trajectories)
    assert refused.status is Status.failed and "allow_in_process" in refused.error.message
    allowed = _evaluate(strongest_backend(), task, trajectories, allow_in_process=True)
    assert allowed.status is Status.ok and allowed.candidate("honest").passed is True
    assert allowed.provenance.integrity == "in_process"
    assert [c.kind for c in allowed.concerns if c.kind == "weak_isolation"] == ["weak_isolation"]
    assert {t["integrity"] for t in allowed.candidate("honest").details["tests"]} == {"in_process"}


POLY_PROMPT = '''import math


def poly(xs: list, x: float):
    """Evaluates the polynomial with coefficients xs at x."""
    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def find_zero(xs: list):
    """Return an x with poly(xs, x) == 0."""
'''


@pytest.mark.slow
def test_prompt_helpers_are_defined_from_the_prompt_not_the_candidate():
    """HumanEval-style: the test uses ``poly`` from the prompt; a candidate that redefines it to
    make any answer look right must not pass."""
    task = Task(id="zero", prompt=POLY_PROMPT, entry_point="find_zero", language="python", tests=[
        {"kind": "check", "code": "def check(candidate):\n    for xs in ([1, 2], [-6, 11, -6, 1]):\n"
                                  "        assert abs(poly(xs, candidate(xs))) < 1e-4\n"}])
    honest = ("    lo, hi = -100.0, 100.0\n    for _ in range(200):\n        mid = (lo + hi) / 2\n"
              "        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n"
              "            lo = mid\n"
              "    return lo\n")
    cheat = "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n"
    result = _evaluate(strongest_backend(), task, [Trajectory(id="honest", answer=honest),
                                           Trajectory(id="cheat", answer=cheat)])
    assert result.candidate("honest").passed is True, result.candidate("honest").details
    assert result.candidate("cheat").passed is False


@pytest.mark.slow
def test_candidate_objects_exceptions_and_callbacks_cross_the_boundary():
    code = ("class Stack:\n    def __init__(self):\n        self.items = []\n"
            "    def push(self, x):\n        self.items.append(x)\n        return self\n"
            "    def pop(self):\n        if not self.items:\n            raise IndexError('pop from empty stack')\n"
            "        return self.items.pop()\n    def __len__(self):\n        return len(self.items)\n"
            "def apply_all(fn, xs):\n    return [fn(x) for x in xs]\n")
    task = Task(id="objects", prompt="", language="python", entry_point="Stack", tests=[
        {"kind": "assert", "name": "methods", "code": "s = Stack()\ns.push(1).push((2, 3))\nassert len(s) == 2\n"
                                                      "assert s.pop() == (2, 3) and s.pop() == 1\n"},
        {"kind": "assert", "name": "exception_type", "code": "try:\n    Stack().pop()\nexcept IndexError as e:\n"
                                                             "    assert 'empty' in str(e)\nelse:\n"
                                                             "    raise AssertionError('no IndexError')\n"},
        {"kind": "assert", "name": "callback", "code": "seen = []\ndef f(x):\n    seen.append(x)\n    return x * x\n"
                                                       "assert apply_all(f, [1, 2, 3]) == [1, 4, 9]\n"
                                                       "assert seen == [1, 2, 3]\n"},
        {"kind": "assert", "name": "in_process_only", "code": "assert apply_all.__code__.co_argcount == 2\n"}])
    result = _evaluate(strongest_backend(), task, [Trajectory(id="s", code=code)])
    tests = {t["name"]: t for t in result.candidate("s").details["tests"]}
    assert [tests[n]["outcome"] for n in ("methods", "exception_type", "callback")] == ["pass"] * 3, tests
    # the test's design needs the candidate's process (read before anything was asked): the test's
    # doing, reported broken and scored for nobody, never the candidate's error
    assert tests["in_process_only"]["outcome"] == "broken"
    assert "needs in-process access" in tests["in_process_only"]["message"]
    assert [b.test for b in result.broken_tests] == ["in_process_only"]
    assert result.candidate("s").passed is True


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


@pytest.mark.slow
def test_killing_the_oracle_kills_its_warm_workers(tmp_path):
    """kill -9 of the oracle process: the sandboxed workers and their runs die with it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "hold.py"
    script.write_text(
        "import asyncio, sys\n"
        "from oracle.config.model import OracleConfig\nfrom oracle.strategies.protocol import EvaluationContext\n"
        "from oracle.tasks.task import Task, Trajectory\n"
        "from oracle.strategies.verifier.strategy import VerifierStrategy\n"
        "config = OracleConfig(verifier={'timeout_s': 60, 'workers': 1})\n"
        "task = Task(id='t', prompt='', entry_point='f', tests=[{'kind': 'call', 'call': 'f()', 'expected': 1}])\n"
        "code = 'import time\\ndef f():\\n    print(\"running\", flush=True)\\n    time.sleep(300)\\n'\n"
        "asyncio.run(VerifierStrategy().evaluate(EvaluationContext(task=task, "
        "trajectories=(Trajectory(id='a', code=code),), config=config)))\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=str(Path(__file__).resolve().parents[1]))
    try:
        deadline = time.monotonic() + 30
        sleepers: list[int] = []
        while time.monotonic() < deadline and not sleepers:
            time.sleep(0.2)
            for pid in os.listdir("/proc"):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if ZYGOTE_MODULE.encode() in cmd and int(pid) != proc.pid and _descends_from(int(pid), proc.pid):
                    sleepers.append(int(pid))  # this oracle's workers only, not other tests' pools
        assert sleepers, "no sandbox worker appeared"
        time.sleep(1.0)  # the run is in progress
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    alive = sleepers
    while time.monotonic() < deadline and alive:
        time.sleep(0.2)
        alive = [p for p in sleepers if Path(f"/proc/{p}").exists()
                 and ZYGOTE_MODULE.encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert alive == [], f"workers outlived the oracle: {alive}"


@pytest.mark.slow
def test_the_test_cannot_hand_the_candidate_its_own_process():
    """A module or a real connection bound into the candidate would let it run code on the test
    side: refused with a message that says how to wrap it (the test is broken: its own doing); a
    test-defined wrapper crosses."""
    code = "HOOK = None\ndef use():\n    return HOOK.getcwd() if hasattr(HOOK, 'getcwd') else HOOK.value()\n"
    # The prompt declares HOOK, so the test's assignment is handed over (see runtime/handover.py).
    task = Task(id="hooks", prompt="HOOK = None\n", language="python", entry_point="use", tests=[
        {"kind": "assert", "name": "module", "code": "import os\nHOOK = os\nassert use() is not None\n"},
        {"kind": "assert", "name": "builtin_open", "code": "HOOK = open\nassert use() is not None\n"},
        {"kind": "assert", "name": "wrapper", "code": "class Box:\n    def value(self):\n        return 42\n"
                                                      "HOOK = Box()\nassert use() == 42\n"}])
    result = _evaluate(strongest_backend(), task, [Trajectory(id="c", code=code)])
    tests = {t["name"]: t for t in result.candidate("c").details["tests"]}
    assert tests["wrapper"]["outcome"] == "pass", tests
    for name in ("module", "builtin_open"):  # the test's own doing: broken, never the candidate's error
        assert tests[name]["outcome"] == "broken"
        assert "wrap it in a class" in tests[name]["message"], tests[name]
