"""What a test's code shows before anything runs: the mistakes that would charge a candidate for the
task's fault, refused at load with the test named.

Why at load: an ``assert`` test written pytest-style (``def test_x(): assert ...``) defines a
function that nothing calls, so it passes any candidate; a ``check`` test that defines no ``check``
fails every candidate; a ``call`` that does not parse errors for every candidate. Each of these is
visible in the source, so it is refused before a sandbox starts, not reported after.

Only what is certain is refused (a false refusal blocks a correct task). An ``assert`` test is
refused only when nothing outside function bodies can run or fail: no ``assert`` or ``raise`` at
any depth (inside ``if``/``for``/``with``/``try`` too), no call (a helper the test defines, a
decorator that is not pytest's), while it defines ``test*`` functions. A ``check`` test is refused
when it parses and nothing at module level can bind ``check`` (no def, assignment, import, star
import, ``global check``, nor dynamic access such as ``globals()`` or ``exec``). JavaScript tests
are not parsed here (no JavaScript parser on the host); the run-time checks cover them. With no
``task.language``, a call is refused only when it parses neither as Python nor looks like
JavaScript.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from typing import Iterator

_JS_HINT = re.compile(r"=>|===|!==|\?\.|\?\?|`|\bnew\s|\bfunction\b|\.\.\.|\bundefined\b|\bnull\b")
_DYNAMIC = frozenset({"globals", "vars", "locals", "exec", "eval", "__import__", "setattr", "__dict__", "modules"})
"""Names and attributes through which code can bind a global without naming it (``globals()[...]``,
``exec``, ``sys.modules[__name__]``, ``setattr(module, ...)``)."""
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _parse(code: str, mode: str = "exec") -> ast.AST | None:
    """The tree, or None; never a warning on the user's terminal (an invalid escape in a test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code, mode=mode)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _pytest_names(tree: ast.Module) -> set[str]:
    """Names bound to pytest or its parts (``import pytest``, ``from pytest import mark``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "pytest")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "pytest":
            names.update(a.asname or a.name for a in node.names)
    return names


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _module_level(tree: ast.Module, skip_decorator) -> Iterator[ast.AST]:
    """Every node that runs when the module runs: function bodies (and lambdas) left out; their
    default values, class bodies and decorators kept, but not decorators ``skip_decorator`` allows."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(d for d in node.decorator_list if not skip_decorator(d))
            stack.extend(node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
            args = node.args
            stack.extend(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs,
                                                args.vararg, args.kwarg) if a is not None and a.annotation)
            if node.returns is not None:
                stack.append(node.returns)
            continue
        if isinstance(node, ast.ClassDef):
            stack.extend(d for d in node.decorator_list if not skip_decorator(d))
            stack.extend(node.bases)
            stack.extend(node.keywords)
            stack.extend(node.body)
            continue
        if isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _test_functions(tree: ast.Module) -> list[str]:
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            found.extend(f"{node.name}.{n.name}" for n in node.body
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
    return found


@functools.lru_cache(maxsize=4096)
def assert_problem(code: str) -> str | None:
    """Why an ``assert`` test would pass any candidate, or None (see the module docstring)."""
    tree = _parse(code)
    if not isinstance(tree, ast.Module):
        return None  # not Python (JavaScript, or a syntax error the run reports as a broken test)
    tests = _test_functions(tree)
    if not tests:
        return None
    pytest_names = _pytest_names(tree)

    def pytest_decorator(node: ast.expr) -> bool:
        return _root(node) in pytest_names

    for node in _module_level(tree, pytest_decorator):
        if isinstance(node, (ast.Assert, ast.Raise, ast.Call, ast.Await)):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
                not pytest_decorator(d) for d in node.decorator_list):
            return None  # a decorator of the test's own may call the function
    shown = ", ".join(tests[:3]) + (" ..." if len(tests) > 3 else "")
    return (f"this assert test only defines test functions ({shown}) and never calls them or asserts "
            "anything at module level, so it would pass any candidate; use kind: pytest to run them "
            "as pytest tests, or call them in the code")


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any(a.name == "*" or (a.asname or a.name).split(".")[0] == name for a in node.names)
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    return False


def _dynamic(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in _DYNAMIC) or \
        (isinstance(node, ast.Attribute) and node.attr in _DYNAMIC)


@functools.lru_cache(maxsize=4096)
def check_problem(code: str) -> str | None:
    """Why a ``check`` test can never call ``check(candidate)``, or None (see the module docstring)."""
    tree = _parse(code)
    if not isinstance(tree, ast.Module):
        return None
    for node in ast.walk(tree):  # `global check` in a function, or a binding it cannot see
        if (isinstance(node, ast.Global) and "check" in node.names) or _dynamic(node):
            return None
    defs = []
    for node in _module_level(tree, lambda d: False):
        if _binds(node, "check"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None
            defs.append(node)
    if not defs:
        return ("this check test defines no check function: it must define check(candidate), which is called "
                "with the entry point")
    if all(not (d.args.posonlyargs or d.args.args or d.args.vararg) for d in defs):
        return "check() takes no argument: it must take the candidate, check(candidate)"
    return None


def call_problem(call: str, language: str | None) -> str | None:
    """Why a ``call`` expression can never run, or None: it does not parse as a Python expression
    (for a Python task; with no task language, only when it does not look like JavaScript either)."""
    if language not in (None, "python"):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(call, mode="eval")
        except (SyntaxError, ValueError) as exc:
            if language is None and _JS_HINT.search(call):
                return None
            msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            return f"the call does not parse as a Python expression: {msg}"
        except (RecursionError, MemoryError):
            return None
    return None


_PYTHON_NAMES = frozenset({"python", "py", "python3"})


def static_problem(test: object, language: str | None) -> str | None:
    """The load-time problem of one test in a task of ``language`` (``task.language``), or None."""
    kind = getattr(test, "kind", None)
    language = (language or "").strip().lower() or None
    if language is not None:
        if language not in _PYTHON_NAMES:
            return None
        language = "python"
    if kind == "assert":
        return assert_problem(test.code)  # type: ignore[attr-defined]
    if kind == "check":
        return check_problem(test.code)  # type: ignore[attr-defined]
    if kind == "call":
        return call_problem(test.call, language)  # type: ignore[attr-defined]
    return None
