"""The names a pytest run's test modules see: the candidate's module, the bare names, the task's modules.

``solution`` (``CandidateModule``) serves the candidate's exported names from outside its
``__dict__`` and counts every read; ``from solution import *`` gives only ``star_names``. The
task's own modules (test files, conftest, helpers) load through ``TaskModules``, first on
``sys.meta_path``, with ``Scope`` as their builtins: the real builtins, then the names they may use
bare (the candidate's exports, the prompt's definitions, ``bind_global``). ``Involvement`` counts
how far the candidate has been drawn in, which decides whether an error is the test's own.
"""

from __future__ import annotations

import builtins
import importlib.abc
import keyword
import os
import sys
import types

from . import rpc

_BUILTIN_NAMES = frozenset(dir(builtins))
_MAGIC_PREFIXES = ("test", "Test", "pytest", "setup", "teardown", "setUp", "tearDown", "collect_ignore")
"""Names pytest gives a meaning to in a test module, a class or a conftest: never star-imported."""
_MAGIC_NAMES = frozenset({"pytest", "conftest", "request", "fixture", "mark", "param", "raises", "approx",
                          "bind_global"})


class Involvement:
    """How far the candidate has been drawn in: requests sent to it, exported names read, and names
    it was expected to define but does not. An error while this has not moved is the test's own."""

    def __init__(self, peer: rpc.Peer | None, blame_test: bool = True) -> None:
        self.peer = peer
        self.blame_test = blame_test
        """False where the candidate shares the process (in_process): then no error is surely the test's."""
        self.reads = 0
        self.plain_reads = 0
        """Reads of a plain value the candidate exported (a constant it could steer a test with)."""
        self.missing: list[str] = []

    def now(self) -> int:
        return (self.peer.requests_made if self.peer is not None else 0) + self.reads + len(self.missing)


class CandidateModule(types.ModuleType):
    """``solution``: the candidate's exported names, read through the channel's proxies.

    Its names are kept out of ``__dict__`` (nothing that walks a module's dict, such as pytest's
    fixture parser, ever meets a proxy) and served by ``__getattr__``, which counts every read.
    Setting one would change only this process's copy, never the candidate's global: refused, with
    the mode that does it (``execution: in_process``)."""

    def __init__(self, name: str, exports: dict, involvement: Involvement, star: list[str]) -> None:
        super().__init__(name)
        d = self.__dict__
        d["__file__"] = None
        d["__all__"] = star
        d["_oracle_exports"] = exports
        d["_oracle_involvement"] = involvement

    def __getattr__(self, name: str):
        exports = self.__dict__["_oracle_exports"]
        involvement = self.__dict__["_oracle_involvement"]
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in exports:
            involvement.reads += 1
            value = exports[name]
            if not isinstance(value, rpc.Remote):
                involvement.plain_reads += 1
            return value
        involvement.missing.append(name)
        raise AttributeError(f"the candidate's module {self.__name__!r} defines no {name!r}")

    def __dir__(self):
        return sorted(self.__dict__["_oracle_exports"])

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("__") and name.endswith("__"):
            return super().__setattr__(name, value)
        raise rpc.NeedsInProcess(
            f"the test sets {self.__name__}.{name}, a global of the candidate's own process; changing the "
            "candidate's globals (monkeypatch.setattr on its module) needs task.execution: in_process "
            "with verifier.allow_in_process; or hand the value over with bind_global(name, value)")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)


def task_names(files: dict) -> set[str]:
    """Every name the task's own modules bind at their top level (functions, classes, fixtures,
    assignments, imports): a star import of the candidate never rebinds one of them."""
    import ast

    names: set[str] = set()
    for name, text in files.items():
        if not name.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
    return names


def star_names(exports: dict, entry_point: str | None, taken: set[str]) -> list[str]:
    """What ``from solution import *`` gives: the exported names pytest gives no meaning to (no test,
    hook, mark, xunit setup, ``pytest_plugins``) and that no module of the task defines itself (a
    candidate's ``expected`` cannot replace the task's fixture ``expected``)."""
    out = []
    for name in exports:
        if name.startswith("_") or name.startswith(_MAGIC_PREFIXES) or name in _MAGIC_NAMES or name in taken \
                or keyword.iskeyword(name) or (name in _BUILTIN_NAMES and name != entry_point):
            continue
        out.append(name)
    return out


class Scope(dict):
    """The builtins of the task's own modules: the real builtins, then the names the task may use
    bare (the candidate's exported names, the prompt's definitions, ``bind_global``). Reads of a
    candidate name, and a miss of the entry point, are counted as the candidate's involvement."""

    def __init__(self, names: dict, candidate: frozenset[str], expected: str | None,
                 involvement: Involvement) -> None:
        super().__init__(builtins.__dict__)
        self.update(names)
        self._candidate, self._expected, self._involvement = candidate, expected, involvement

    def __getitem__(self, name):
        try:
            value = dict.__getitem__(self, name)
        except KeyError:
            if name == self._expected:
                self._involvement.missing.append(name)
            raise
        if name in self._candidate:
            self._involvement.reads += 1
        return value


class _ScopedLoader(importlib.abc.Loader):
    """Loads one of the task's modules with ``Scope`` as its builtins, then as the wrapped loader does."""

    def __init__(self, inner, scope: Scope) -> None:
        self._inner, self._scope = inner, scope

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        module.__dict__["__builtins__"] = self._scope
        self._inner.exec_module(module)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class TaskModules(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the task's modules (files under ``root``) are found by the finders
    behind it (pytest's assertion rewriter among them) and loaded with ``Scope`` as their builtins."""

    def __init__(self, root: str, scope: Scope | None) -> None:
        self.root = os.path.realpath(root) + os.sep
        self.scope = scope
        self.tops = {n.split(".")[0] for n in _module_names(root)}

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in self.tops:
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        if spec is None or not spec.origin or spec.loader is None:
            return spec
        if os.path.realpath(spec.origin).startswith(self.root) and self.scope is not None:
            spec.loader = _ScopedLoader(spec.loader, self.scope)
        return spec

    def owns(self, module_name: str | None) -> bool:
        module = sys.modules.get(module_name or "")
        origin = getattr(module, "__file__", None)
        return isinstance(origin, str) and os.path.realpath(origin).startswith(self.root)


def _module_names(root: str) -> set[str]:
    names = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for f in files:
            if f.endswith(".py"):
                parts = ([] if rel == "." else rel.split(os.sep)) + [f[:-3]]
                names.add(".".join(parts))
                names.add(f[:-3])  # prepend mode imports a file by its own name when its dir has no __init__
    return names
