"""Collecting the suite starts no process and does not depend on which tools this machine has.

A module that probed the sandbox backends at import (nsjail and bubblewrap are probed by starting
``true`` in them) made every collection spawn processes, and its test ids changed with the machine.
Here the whole suite is collected in child pytest processes, under an audit hook that records every
process start, once with the normal PATH and once with a PATH where no tool (bwrap, node, chromium)
can be found: both must collect without error, start nothing, and list the same tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

CHILD = textwrap.dedent('''
    import json, sys, traceback
    SPAWNS = {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn",
              "os.system", "pty.spawn"}
    seen = []

    ROOT = sys.argv[1].rstrip("/") + "/"

    def hook(event, args):
        # Only starts that the suite's own code asks for: a frame of the checkout (tests/, oracle/,
        # ...) on the stack. Third-party pytest plugins of the machine may run git at start-up.
        if event in SPAWNS:
            stack = traceback.extract_stack()[:-1]
            if any(f.filename.startswith(ROOT) for f in stack):
                seen.append({"event": event, "args": repr(args)[:300],
                             "stack": "".join(traceback.format_list(stack[-12:]))})

    sys.addaudithook(hook)
    import pytest

    class Ids:
        ids = []

        def pytest_collection_finish(self, session):
            Ids.ids = [item.nodeid for item in session.items]

    rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[Ids()])
    spawned, seen[:] = list(seen), []
    exec(compile('import subprocess, sys; subprocess.run([sys.executable, "-c", "pass"], check=True)',
         ROOT + 'tests/control.py', 'exec'))  # a start from the checkout: the hook must see it
    print("@@RESULT " + json.dumps({"rc": int(rc), "ids": Ids.ids, "spawns": spawned,
                                    "hook_saw_control": [s["event"] for s in seen]}))
''')


def _collect(path: str) -> subprocess.Popen:
    env = {**os.environ, "PATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _result(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=300)
    line = next((ln for ln in out.splitlines() if ln.startswith("@@RESULT ")), None)
    assert line is not None, out[-4000:]
    result = json.loads(line.removeprefix("@@RESULT "))
    assert result["rc"] == 0, out[-4000:]
    return result


@pytest.mark.slow  # two collections of the whole suite: about 30 s of CPU
def test_collecting_the_suite_starts_no_process_and_needs_no_tool(tmp_path):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    normal, bare = _collect(os.environ.get("PATH", "")), _collect(str(empty))
    with_tools, without_tools = _result(normal), _result(bare)
    for result in (with_tools, without_tools):
        assert result["hook_saw_control"] == ["subprocess.Popen"]
        assert result["spawns"] == [], "\n\n".join(f"{s['event']} {s['args']}\n{s['stack']}"
                                                    for s in result["spawns"][:3])
    assert len(with_tools["ids"]) > 1000
    assert without_tools["ids"] == with_tools["ids"]
    assert "tests/test_sandbox_attacks.py::test_infinite_loop_is_killed_on_time[bubblewrap]" in with_tools["ids"]
