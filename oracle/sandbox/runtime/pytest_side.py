"""The test process of a ``pytest`` test: real pytest, in this process, against the candidate's proxies.

The warm worker (zygote.py) runs this module instead of test_side.py when the run's spec is a pytest
test. This process holds no candidate code (the candidate runs in its own sandbox). It
writes the task's test files into a private directory, installs the module ``solution`` (the task's
``module``) whose attributes are the candidate's exported names (candidate objects as handles,
plain values by value), makes the entry point and the other exported names reachable as bare names
in the task's own modules (as the other kinds do), and runs ``pytest.main`` with the plugin below.

What a candidate cannot change (each is an attack test, tests/test_pytest_integrity.py):
- what is collected: the test files are the task's, written here; the candidate's files never
  reach this sandbox, so it has no conftest, plugin, ``pytest`` or ``_pytest`` of its own; plugin
  autoload is off unless the task's environment provides pytest (its plugins are then the task's);
- what its names become: ``from solution import *`` gives only names that cannot be a test, a
  fixture, a hook, a mark or an xunit setup (``__all__``), and an item whose function is a candidate
  proxy is dropped and reported (``dropped``); fixtures and marks are found by type, never by asking
  a proxy;
- what an outcome is: its exceptions cross as fresh built-in exceptions (``Skipped``, ``Failed``,
  ``Exit`` arrive as ``Exception`` or as a ``CrossedRaise``, never as pytest's own), an exit is a
  violation, a test-side assertion that fails in a callback fails the test even if swallowed;
- how many tests ran: the host is told what was collected before the first test runs, then one
  frame per test as it ends; a test the host never heard of is not passed (timeout or error).

Report frames (the host reads them on the report descriptor): ``collected`` (node ids), one
``case`` per test or collection error (node id, outcome, message, duration), and the ``verdict``
(``outcome: "suite"``, pytest's exit status, counts, the pytest version, what was dropped).

Outcome words: pass, fail, error, skipped, xfailed, xpassed and broken: a collection error, or a
fixture/setup error, while the candidate had not been involved since the test started (no request
sent, no exported name read) is the test's own fault; after that it is the candidate's ``error``. A
name the candidate was expected to define and does not (``from solution import missing``, the entry
point read as a bare name) involves it: that error is its own, never ``broken``.
"""

from __future__ import annotations

import builtins
import io
import keyword
import os
import sys
import tempfile
import time
import types

from . import rpc, test_side, wire
from .pytest_names import CandidateModule, Involvement, Scope, TaskModules, star_names, task_names
from .pytest_plugin import Plugin, frame, short

_BUILTIN_NAMES = frozenset(dir(builtins))


def write_files(files: dict, root: str) -> None:
    for name, text in files.items():
        path = os.path.join(root, *name.split("/"))
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)



def _pytest_args(root: str, ini: str, select, plugin_autoload: bool) -> list[str]:
    # log_file: pytest's logging plugin opens its file handler even when no log file is asked for
    # (os.devnull by default, which a Landlock sandbox does not let a run write): ours is in the run's dir.
    log = os.path.join(os.path.dirname(ini), "oracle-pytest.log")
    args = [
        "-c",
        ini,
        "--rootdir",
        root,
        "-o",
        f"log_file={log}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:pastebin",
        "-p",
        "no:junitxml",
        "-p",
        "no:doctest",
        "-p",
        "no:debugging",
        "-vv",
        "--tb=short",
        "--color=no",
        "--code-highlight=no",
        "--continue-on-collection-errors",
        "--capture=sys",
        "-o",
        "console_output_style=classic",
    ]
    if isinstance(select, list):
        return args + list(select)
    if isinstance(select, str):
        return args + ["-k" + select, root]  # one argument: an expression may start with "-"
    return args + [root]


def _prepare_process(spec: dict) -> str | None:
    """This process's settings for pytest; the reason when pytest cannot be imported."""
    sys.dont_write_bytecode = True
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        os.environ.pop(name, None)
    if not spec.get("plugin_autoload"):
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    paths = [p for p in spec.get("test_sys_path") or [] if isinstance(p, str)]
    sys.path[:0] = [p for p in paths if p not in sys.path]
    try:
        import pytest  # noqa: F401
    except BaseException as exc:  # noqa: BLE001
        return f"ModuleNotFoundError: the test side cannot import pytest ({type(exc).__name__}: {exc})"
    return None


def _run_pytest(spec: dict, report: wire.Channel, involvement: Involvement, finder: TaskModules,
                is_candidate) -> dict:
    import pytest

    ini = os.path.join(os.path.dirname(finder.root.rstrip(os.sep)), "oracle-pytest.ini")
    with open(ini, "w") as fh:
        fh.write("[pytest]\npython_files = test_*.py *_test.py\n")
    plugin = Plugin(report, involvement, finder, is_candidate, involvement.now())
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr, os.getcwd()
    root = finder.root.rstrip(os.sep)
    os.chdir(root)
    sys.stdout, sys.stderr = out, err
    started = time.monotonic()
    try:
        status = int(pytest.main(_pytest_args(root, ini, spec.get("select"), bool(spec.get("plugin_autoload"))),
                                 plugins=[plugin]))
    except BaseException as exc:  # noqa: BLE001 - pytest itself failed: reported, never a pass
        status = -1
        err.write(f"{type(exc).__name__}: {rpc._message(exc)}")
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    verdict = frame("verdict", outcome="suite", exit_status=status, collected=plugin.collected,
                     reported=len(plugin.cases), dropped=plugin.dropped, pytest_version=pytest.__version__,
                     duration_ms=round((time.monotonic() - started) * 1000, 1))
    if not plugin.collected and not plugin.cases:
        text = (err.getvalue() or out.getvalue()).strip().splitlines()
        why = {5: "pytest collected no test" + (" (select matched none)" if spec.get("select") else ""),
               4: "pytest refused its arguments (usage error)", 3: "pytest failed internally"}.get(
            status, f"pytest ended with status {status}")
        detail = ": " + " | ".join(text[-3:]) if text and status != 5 else ""
        dropped = f" (candidate names not collected: {', '.join(plugin.dropped)})" if plugin.dropped else ""
        verdict["message"] = short(why + detail + dropped)
        blame_test = involvement.blame_test and involvement.now() == plugin.run_start and status != -1
        verdict["suite_outcome"] = "broken" if blame_test else "error"
    unreported = [n for n in plugin.collected if n not in plugin.cases]
    if unreported:
        verdict["unreported"] = unreported
    return verdict


def _scope_names(spec: dict, exported: dict, bind_global) -> tuple[dict, frozenset[str]] | dict:
    """The names the task's modules may use bare, and which of them are the candidate's (as for the
    other kinds: the entry point always; other exported names unless they shadow a builtin or a name
    the prompt defines); or an error verdict when the prompt's own code fails here."""
    entry_point = spec.get("entry_point")
    prompt_ns: dict = {}
    if spec.get("prompt_code"):
        prompt_ns = test_side._fresh_module()
        try:
            exec(compile(spec["prompt_code"], "<prompt>", "exec"), prompt_ns)
        except BaseException as exc:  # noqa: BLE001
            return test_side._verdict("error", f"the task prompt's own code failed on the test side: "
                                               f"{type(exc).__name__}: {rpc._message(exc)}")
    prompt_names = {n: v for n, v in prompt_ns.items() if not n.startswith("__")}
    names = {name: value for name, value in exported.items()
             if name == entry_point or not (name in prompt_names or name in _BUILTIN_NAMES or name.startswith("_")
                                            or name == "bind_global")}
    return {**prompt_names, **names, "bind_global": bind_global}, frozenset(names)


def _task_dir(spec: dict) -> TaskModules:
    """The task's files, written into a private directory of this run, and the finder that loads them."""
    root = tempfile.mkdtemp(prefix="tests-", dir=os.getcwd())
    write_files(spec["files"], root)
    return TaskModules(root, None)


def run_isolated(spec: dict, report: wire.Channel) -> dict:
    """The suite against a candidate in another process (``integrity: isolated``)."""
    problem = _prepare_process(spec)
    channel = wire.Channel(spec["channel_fd"])
    if problem:
        return test_side._verdict("error", problem)
    finder = _task_dir(spec)
    try:
        first = channel.recv()
    except EOFError:
        return test_side._load_error("the candidate process ended before it finished loading")
    except wire.ChannelError as exc:
        return test_side._load_error(f"the candidate sent garbage instead of loading: {exc}")
    if first.get("op") == "load_error":
        return test_side._load_error(str(first.get("msg", "the candidate failed to load"))[:2000])
    if first.get("op") != "ready" or not isinstance(first.get("exports"), list):
        return test_side._load_error(f"the candidate sent {first.get('op')!r} instead of loading")

    def exportable(obj):
        """What the test may hand the candidate as a handle: as for the other kinds, with the task's
        own modules (test files, conftest, helpers) in the place of ``__main__``."""
        kind = test_side.test_exportable(obj)
        if kind is not None:
            return kind
        if isinstance(obj, types.MethodType):
            return "callable" if exportable(obj.__self__) else None
        if isinstance(obj, (type, types.FunctionType)):
            return ("class" if isinstance(obj, type) else "callable") if finder.owns(obj.__module__) else None
        return "object" if finder.owns(type(obj).__module__) else None

    peer = rpc.Peer(channel, "t", exportable=exportable)
    try:
        exported = test_side.decode_exports(peer, first["exports"])
    except wire.ChannelError as exc:
        return test_side._load_error(f"the candidate sent garbage while loading: {exc}")
    involvement = Involvement(peer)

    def bind_global(name: str, value) -> None:
        """Set the global ``name`` of the candidate's module to ``value`` (plain data by value, the
        test's own objects as handles): the one way a pytest test hands the candidate something."""
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
                or name.startswith("__"):
            raise ValueError(f"bind_global: {name!r} is not a global name the candidate can be given")
        peer.request({"op": "setglobal", "name": name, "value": peer.outgoing(value)})

    names = _scope_names(spec, exported, bind_global)
    if isinstance(names, dict):
        return names
    module_name = spec.get("module") or "solution"
    sys.modules[module_name] = CandidateModule(module_name, exported, involvement,
                                               star_names(exported, spec.get("entry_point"), task_names(spec["files"])))
    finder.scope = Scope(names[0], names[1], spec.get("entry_point"), involvement)
    verdict = _run_pytest(spec, report, involvement, finder, lambda obj: isinstance(obj, rpc.Remote))
    try:
        channel.send({"op": "close"})
    except (wire.ChannelError, wire.NotPlain):
        pass
    return verdict


def run_in_process(spec: dict, report: wire.Channel) -> dict:
    """The opt-in weak mode: the candidate's code is the real module ``solution`` in this process
    (``integrity: in_process``): a test may monkeypatch its globals, and the candidate can forge
    the verdict; results say so. Nothing is ``broken`` here: the candidate shared the process."""
    problem = _prepare_process(spec)
    if problem:
        return test_side._verdict("error", problem)
    finder = _task_dir(spec)
    module_name = spec.get("module") or "solution"
    module = types.ModuleType(module_name)
    module.__dict__["__builtins__"] = builtins
    module.__dict__["__file__"] = f"{module_name}.py"
    sys.modules[module_name] = module
    try:
        exec(compile(spec["code"], f"{module_name}.py", "exec"), module.__dict__)
    except BaseException as exc:  # noqa: BLE001
        from . import candidate_side

        return test_side._load_error(candidate_side.describe_load_error(exc)["msg"])
    exported = {n: v for n, v in module.__dict__.items() if not n.startswith("__")}
    involvement = Involvement(None, blame_test=False)
    names = _scope_names(spec, exported, lambda name, value: module.__dict__.__setitem__(name, value))
    if isinstance(names, dict):
        return names
    finder.scope = Scope(names[0], names[1], spec.get("entry_point"), involvement)
    return _run_pytest(spec, report, involvement, finder,
                       lambda obj: getattr(obj, "__module__", None) == module_name)


def main(spec: dict) -> int:
    report = wire.Channel(spec["report_fd"])
    verdict = run_in_process(spec, report) if spec.get("in_process") else run_isolated(spec, report)
    try:
        report.send(verdict)
    except wire.NotPlain as exc:
        report.send(test_side._verdict("error", f"the suite's result cannot be reported: {exc}"))
    return 0
