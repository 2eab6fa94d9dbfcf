"""The candidate process: load the candidate's code, announce its top-level names, answer requests.

Nothing here decides a verdict. Whatever the candidate does to this process (patching builtins,
the codec, ``os.write``; exiting early; writing to the channel itself) can only change the plain
data it sends back, which the test process checks on its own side.
"""

from __future__ import annotations

import builtins
import os
import sys
import types

from . import rpc, wire


def load(source: str) -> types.ModuleType:
    """Run the candidate's code as a fresh ``__main__`` module."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    module.__dict__["__file__"] = "candidate.py"
    sys.modules["__main__"] = module
    sys.argv = ["candidate.py"]
    exec(compile(source, "<candidate>", "exec"), module.__dict__)
    return module


def describe_load_error(exc: BaseException) -> dict:
    if isinstance(exc, SyntaxError):
        text = f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    elif isinstance(exc, SystemExit):
        text = f"exited (SystemExit {exc.code!r}) while loading the candidate"
    else:
        text = f"{type(exc).__name__} while loading the candidate: {rpc._message(exc)}"
    return {"op": "load_error", "type": wire.builtin_exception_name(exc), "msg": text[:2000]}


def serve(spec: dict, fd: int) -> int:
    """Load, send ``ready`` with the exports, then serve until the test process closes the channel."""
    channel = wire.Channel(fd)
    try:
        module = load(spec["code"])
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure to load is its answer
        channel.send(describe_load_error(exc))
        return 0
    peer = rpc.Peer(channel, "c", exportable=rpc.candidate_exportable("__main__"), namespace=module.__dict__)
    exports = []
    for name, value in list(module.__dict__.items()):
        if name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        try:
            exports.append([name, wire.encode(value, peer.to_handle)])
        except (wire.NotPlain, RecursionError, ValueError):
            continue  # a foreign object (a connection, a numpy array): not offered to the test
    try:
        channel.send({"op": "ready", "exports": exports})
        peer.serve()
    except (wire.ChannelError, EOFError):
        return 0
    return 0


def run_script(spec: dict) -> int:
    """io tests: the candidate is a program; the host compares its stdout. Returns the exit code."""
    try:
        load(spec["code"])
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            return _flush(0)
        if isinstance(code, int):
            return _flush(code & 0xFF)
        print(code, file=sys.stderr)
        return _flush(1)
    except BaseException as exc:  # noqa: BLE001 - reported on stderr like the interpreter would
        import traceback
        traceback.print_exception(type(exc), exc, exc.__traceback__)
        return _flush(1)
    return _flush(0)


def _flush(code: int) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 120
    return code


def main(spec: dict) -> int:
    os.environ.pop("ORACLE_SPEC", None)
    if spec["mode"] == "script":
        return run_script(spec)
    return serve(spec, spec["channel_fd"])
