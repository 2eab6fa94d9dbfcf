"""The test process: run one test with the candidate reachable only through the channel.

This process holds no candidate code. Its namespace has the real builtins, the names the task
prompt defines (run here, from the prompt, never from the candidate), and proxies for the
candidate's own top-level names (the entry point always; other names unless they shadow a builtin
or a prompt name).

Nothing of the test's namespace reaches the candidate unless the test hands it over, in one of two
ways (plain data by value, the test's own objects as handles the candidate can call back):
- ``bind_global(name, value)``, called by the test, sets that global of the candidate's module now;
- a global the task declares: a name the prompt's code assigns at module level (``CONN = None``),
  that the test assigns (``CONN = AppConnection(db)``, also inside a function with ``global
  CONN``) and never reads. Its new value is sent before the candidate's next call.
A name the candidate defines is never a reason to send it anything: defining ``expected`` or
``check`` does not make the test's own ``expected`` or ``check`` readable.

The verdict goes to the host on its own file descriptor: ``pass``, ``fail`` (an assertion of the
test), ``error`` (the candidate raised, could not load, exited, broke the channel, or returned a
value that may not cross), ``broken`` (the test's own fault: it does not compile, the prompt's code
fails here, it raised before asking the candidate anything and blame.py finds that it cannot
have read anything the candidate supplied, or it tried to hand the candidate a value that may not
cross: a candidate that steers a test there is caught across runs, strategies/verifier/broken.py)
or, for ``call`` tests, ``value`` (the host compares it).
"""

from __future__ import annotations

import builtins
import keyword
import sys
import types

from . import blame, handover, rpc, wire

_MISSING = object()
_BUILTIN_NAMES = frozenset(dir(builtins))
_UNSAFE_BUILTINS = frozenset({"eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
                              "globals", "locals", "vars", "input", "breakpoint", "help", "exit", "quit"})


def test_exportable(obj) -> str | None:
    """Which test-side objects the candidate may hold as handles: what the test itself defines (its
    functions, classes, their instances and bound methods) and harmless builtins such as ``len``.
    A module, a real connection or ``open`` would hand the candidate the test process itself; the
    test wraps such things in a class of its own, whose public methods are the candidate's view."""
    if isinstance(obj, rpc._IterBox):
        return "iterator"
    if isinstance(obj, types.MethodType):
        return "callable" if test_exportable(obj.__self__) else None
    if isinstance(obj, type):
        return "class" if obj.__module__ == "__main__" else None
    if isinstance(obj, types.FunctionType):
        return "callable" if obj.__module__ == "__main__" else None
    if isinstance(obj, types.BuiltinFunctionType):
        return "callable" if obj.__self__ is builtins and obj.__name__ not in _UNSAFE_BUILTINS else None
    return "object" if type(obj).__module__ == "__main__" else None


def decode_exports(peer: rpc.Peer, exports: list) -> dict[str, object]:
    """The candidate's ``ready`` export list as name -> value (handles become proxies on ``peer``);
    ChannelError when it is not a list of [identifier, encoded value] pairs."""
    exported: dict[str, object] = {}
    for pair in exports:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and pair[0].isidentifier()):
            raise wire.ChannelError("malformed export list")
        exported[pair[0]] = peer.decode(pair[1])
    return exported


def _test_line(exc: BaseException) -> int | None:
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<test>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _verdict(outcome: str, message: str = "", **extra) -> dict:
    return {"op": "verdict", "outcome": outcome, "message": str(message)[:2000], **extra}


def _load_error(message: str) -> dict:
    """An ``error`` from before the test's code ran (the candidate did not load): ``stage: load``
    tells the host that this run says nothing about the test itself."""
    return _verdict("error", message, stage="load")


def _fresh_module() -> dict:
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    return module.__dict__


def _compile_test(spec: dict):
    """The test's code object, or the ``broken`` verdict when it does not compile. Done before the
    candidate has sent anything, so no candidate can make a test fail to compile."""
    call = spec["kind"] == "call"
    source = spec["call"] if call else spec.get("code")
    if not isinstance(source, str):
        return _verdict("broken", "the test has no code")
    try:
        return compile(source, "<test>", "eval" if call else "exec")
    except SyntaxError as exc:
        where = f" (test line {exc.lineno})" if exc.lineno else ""
        return _verdict("broken", f"the test does not compile: {type(exc).__name__}: {exc.msg}{where}")
    except (ValueError, TypeError, RecursionError, MemoryError, OverflowError) as exc:
        return _verdict("broken", f"the test does not compile: {type(exc).__name__}: {rpc._message(exc)}")


def _broken_reason(exc: BaseException) -> str:
    where = _test_line(exc)
    text = f"{type(exc).__name__}: {rpc._message(exc)}" + (f" (test line {where})" if where else "")
    if isinstance(exc, ModuleNotFoundError):
        return f"the test imports a module the test side lacks: {text}"
    if isinstance(exc, ImportError):
        return f"the test's import failed on the test side: {text}"
    return f"the test raised before any candidate code ran: {text}"


def _exercise(spec: dict, ns: dict, entry, code=None, peer: rpc.Peer | None = None,
              scene: blame.Scene | None = None) -> dict:
    """Run the test body in ``ns``; ``entry`` is the candidate's entry point (or _MISSING). With a
    ``peer`` and a ``scene`` (isolated runs), an exception raised before any request is ``broken``
    when blame.py finds it the test's own."""
    kind = spec["kind"]
    phase = "running the test"
    if code is None:
        code = _compile_test(spec)
        if isinstance(code, dict):
            return code

    def untouched() -> bool:
        return peer is not None and scene is not None and peer.requests_made == 0 and not peer.broken \
            and not peer.violations and not peer.test_failures

    check = None
    try:
        if kind == "call":
            value = eval(code, ns)
            if isinstance(value, rpc.Remote):
                return _verdict("error", f"{spec['call']} returned a candidate {value._handle.kind} "
                                         "(a handle), not plain data")
            try:
                return _verdict("value", value=wire.encode(value))
            except (wire.NotPlain, ValueError) as exc:
                return _verdict("error", f"{spec['call']}: {exc}")
        exec(code, ns)
        if kind == "check":
            if entry is _MISSING:
                return _verdict("fail", f"entry point {spec.get('entry_point')!r} is not defined")
            found = ns.get("check")
            if not callable(found) or isinstance(found, rpc.Remote):
                if untouched() and scene.module_clean():  # type: ignore[union-attr]
                    return _verdict("broken", "the test defines no check function")
                return _verdict("error", "the test defines no check function")
            check = found
            phase = "checking the candidate"
            check(entry)
    except AssertionError as exc:
        where = _test_line(exc)
        detail = rpc._message(exc) or "assertion failed"
        return _verdict("fail", detail + (f" (test line {where})" if where else ""))
    except rpc.NeedsInProcess as exc:  # the test's design needs the candidate's process: the test's doing
        if peer is None:
            return _verdict("error", str(exc))
        return _verdict("broken", blame.broken_by_test(str(exc)),
                        after_answers=_steerable(spec, ns, peer, peer.requests_made))
    except rpc.BoundaryError as exc:
        return _verdict("error", f"{exc} while {phase}")
    except SystemExit as exc:
        return _verdict("error", f"the test exited (SystemExit {exc.code!r}) while {phase}")
    except BaseException as exc:  # noqa: BLE001 - any other exception is an error of this test
        if untouched() and (scene.check_fault(exc, check) if check is not None  # type: ignore[union-attr]
                            else scene.test_fault(exc)):  # type: ignore[union-attr]
            return _verdict("broken", _broken_reason(exc))
        return _verdict("error", f"{type(exc).__name__} while {phase}: {rpc._message(exc)}")
    return _verdict("pass", "all assertions held")


def _steerable(spec: dict, ns: dict, peer: "rpc.Peer", answers: int) -> bool:
    """Whether something the candidate supplied may have led the test where it broke: an answer
    (``answers`` requests made by then), or a plain value it exported that the test reads. Then one
    run alone never shows the test at fault (``after_answers``, strategies/verifier/broken.py)."""
    if answers > 0:
        return True
    plain = {n for n, v in peer.exports.items() if ns.get(n, _MISSING) is v and not isinstance(v, rpc.Remote)}
    source = spec["call"] if spec["kind"] == "call" else spec["code"]
    return blame.may_read_plain_exports(source, "eval" if spec["kind"] == "call" else "exec", plain,
                                        spec.get("module") or "solution")


def run_isolated(spec: dict) -> dict:
    """The test against a candidate in another process (the default, ``integrity: isolated``)."""
    ns = _fresh_module()
    prompt_names: set[str] = set()
    if spec.get("prompt_code"):
        try:
            exec(compile(spec["prompt_code"], "<prompt>", "exec"), ns)
        except BaseException as exc:  # noqa: BLE001 - before the candidate sent anything: the task's fault
            return _verdict("broken", f"the task prompt's own code failed on the test side: "
                                      f"{type(exc).__name__}: {rpc._message(exc)}")
        prompt_names = {n for n in ns if not n.startswith("__")}
    code = _compile_test(spec)
    if isinstance(code, dict):
        return code
    channel = wire.Channel(spec["channel_fd"])
    try:
        first = channel.recv()
    except EOFError:
        return _load_error("the candidate process ended before it finished loading")
    except wire.ChannelError as exc:
        return _load_error(f"the candidate sent garbage instead of loading: {exc}")
    if first.get("op") == "load_error":
        return _load_error(str(first.get("msg", "the candidate failed to load"))[:2000])
    if first.get("op") != "ready" or not isinstance(first.get("exports"), list):
        return _load_error(f"the candidate sent {first.get('op')!r} instead of loading")
    peer = rpc.Peer(channel, "t", exportable=test_exportable)
    try:
        exported = decode_exports(peer, first["exports"])
    except wire.ChannelError as exc:
        return _load_error(f"the candidate sent garbage while loading: {exc}")
    peer.exports = exported  # what blame reads: a plain value among them may steer the test (_steerable)
    entry_point = spec.get("entry_point")
    for name, value in exported.items():
        if name == entry_point or not (name in prompt_names or name in _BUILTIN_NAMES or name.startswith("__")
                                       or name == "bind_global"):
            ns[name] = value
    names = spec["handed_over"] if isinstance(spec.get("handed_over"), list) else handover.handed_over(spec)
    synced = {name: ns.get(name, _MISSING) for name in names}

    def push_rebound_globals() -> None:
        for name, last in synced.items():
            current = ns.get(name, _MISSING)
            if current is not last:
                synced[name] = current
                if current is not _MISSING:
                    send_global(name, current)

    def send_global(name: str, value) -> None:
        peer.before_request = None  # one push at a time: the setglobal request itself must not recurse
        try:
            peer.request({"op": "setglobal", "name": name, "value": peer.outgoing(value)})
        finally:
            peer.before_request = push_rebound_globals

    def bind_global(name: str, value) -> None:
        """Set the global ``name`` of the candidate's module to ``value`` (plain data by value, the
        test's own objects as handles): the one explicit way a test hands something over."""
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
                or name.startswith("__"):
            raise ValueError(f"bind_global: {name!r} is not a global name the candidate can be given")
        push_rebound_globals()
        send_global(name, value)

    ns["bind_global"] = bind_global
    peer.before_request = push_rebound_globals
    entry = exported.get(entry_point, _MISSING) if entry_point else _MISSING
    scene = blame.Scene(spec["call"] if spec["kind"] == "call" else spec["code"],
                        mode="eval" if spec["kind"] == "call" else "exec", entry_point=entry_point,
                        prompt_names=prompt_names, prompt_code=spec.get("prompt_code"),
                        candidate_module=spec.get("module"))
    verdict = _exercise(spec, ns, entry, code, peer, scene)
    if peer.unsendable:  # the test's own value could not cross, even if it caught the error
        verdict = _verdict("broken", blame.broken_by_test(peer.unsendable[0]),
                           after_answers=_steerable(spec, ns, peer, peer.unsendable_at[0]))
    elif peer.broken or peer.violations:  # even when the test caught the BoundaryError
        verdict = _verdict("error", f"{peer.broken or peer.violations[0]} while running the test")
    elif peer.test_failures and verdict["outcome"] in ("pass", "value"):  # the candidate swallowed it
        verdict = _verdict("fail", peer.test_failures[0])
    try:
        channel.send({"op": "close"})
    except (wire.ChannelError, wire.NotPlain):
        pass
    return verdict


def run_in_process(spec: dict) -> dict:
    """The opt-in weak mode: the test runs in the candidate's own process (``integrity: in_process``).
    The candidate can forge this verdict; results say so and raise the weak-isolation escalation."""
    from . import candidate_side

    code = _compile_test({**spec, "code": spec.get("test_code")})  # before the candidate's code runs
    if isinstance(code, dict):
        return code
    try:
        module = candidate_side.load(spec["code"])
    except BaseException as exc:  # noqa: BLE001
        return _load_error(candidate_side.describe_load_error(exc)["msg"])
    ns = module.__dict__
    ns.setdefault("bind_global", lambda name, value: ns.__setitem__(name, value))
    entry = ns.get(spec.get("entry_point") or "", _MISSING)
    return _exercise({**spec, "code": spec.get("test_code")}, ns, entry, code)


def main(spec: dict) -> int:
    report = wire.Channel(spec["report_fd"])
    verdict = run_in_process(spec) if spec.get("in_process") else run_isolated(spec)
    try:
        report.send(verdict)
    except wire.NotPlain as exc:
        report.send(_verdict("error", f"the test's result cannot be reported: {exc}"))
    return 0
