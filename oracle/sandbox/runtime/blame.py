"""Whose fault an exception on the test side is: the test's own (``broken``), or possibly the candidate's.

A test that raises before it has asked the candidate anything (``peer.requests_made == 0``) may
still have touched what the candidate sent: its exports are in the test's namespace before the test
runs (plain values by value, the rest as handles), and a candidate that exports ``slugify = 5``
makes ``slugify("x")`` raise a TypeError with no request made. Reading the exports is not a
request, so the count alone would let a candidate get a test classified broken, and a broken test
stops counting. So an exception is the test's own only when the test could not have read anything
the candidate controls by then, which this module decides from the test's source:

- the test names no global a candidate could have exported (any identifier but a builtin, a name
  the task prompt defines, a dunder, ``bind_global``; the entry point always counts), in the
  module-level statements run so far (up to the one that raised) and in the functions those define,
  unless an earlier plain statement at module level (an import, an assignment, a def) bound it;
- it reaches no namespace dynamically (``globals()``, ``vars``, ``exec``, ``sys.modules``, frames);
- it imports nothing from the candidate's module;
- in ``check(candidate)``, the failing statement and those before it do not touch the parameter.

NameError is never the test's: a name the test calls that no candidate defined is the candidate's
miss. Anything this module cannot place (no module frame, a check bound by assignment) counts as
possibly the candidate's: a doubt is never a broken test.
"""

from __future__ import annotations

import ast
import builtins
import types

_BUILTINS = frozenset(dir(builtins))
_DYNAMIC = frozenset({"globals", "vars", "locals", "exec", "eval", "__import__", "__dict__", "modules",
                      "_getframe", "currentframe", "f_globals", "f_locals", "f_back", "tb_frame", "gi_frame",
                      "get_objects", "get_referrers", "stack", "__builtins__"})
_DYNAMIC_MODULES = frozenset({"__main__", "inspect", "gc", "ctypes"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


class _Reads:
    """Globals a piece of code may read, and whether it reaches a namespace dynamically."""

    def __init__(self, candidate_modules: frozenset[str]) -> None:
        self.names: set[str] = set()
        self.dynamic = False
        self.candidate_modules = candidate_modules

    def note(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC:
            self.dynamic = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            tops = {m.split(".")[0] for m in modules}
            if isinstance(node, ast.ImportFrom) and node.level:
                self.dynamic = True  # a relative import: whatever package that is
            if tops & _DYNAMIC_MODULES:
                self.dynamic = True
            if tops & self.candidate_modules:
                self.dynamic = True  # the candidate's own module: what it holds is the candidate's


def _own_nodes(nodes: list[ast.AST]) -> list[ast.AST]:
    """The nodes of one scope: nested scopes' bodies left out, but what they evaluate here kept
    (decorators, defaults, annotations, bases, a comprehension's first iterable)."""
    out: list[ast.AST] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            stack.extend(node.decorator_list)
            stack.extend(args.defaults)
            stack.extend(d for d in args.kw_defaults if d is not None)
            stack.extend(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                                args.kwarg) if a is not None and a.annotation is not None)
            if node.returns is not None:
                stack.append(node.returns)
        elif isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults)
            stack.extend(d for d in node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.ClassDef):
            stack.extend(node.decorator_list)
            stack.extend(node.bases)
            stack.extend(node.keywords)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.append(node.generators[0].iter)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return out


def _nested(nodes: list[ast.AST]) -> list[ast.AST]:
    return [n for n in nodes if isinstance(n, _SCOPES)]


def _stores(nodes: list[ast.AST]) -> set[str]:
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
    return out


def _loads(nodes: list[ast.AST], reads: _Reads) -> set[str]:
    out: set[str] = set()
    for node in nodes:
        reads.note(node)
        if isinstance(node, ast.Name):
            if node.id in _DYNAMIC:
                reads.dynamic = True
            if isinstance(node.ctx, ast.Load):
                out.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
    return out


def _scope_body(scope: ast.AST) -> tuple[list[ast.AST], set[str]]:
    """A nested scope's own nodes and the names it binds itself (parameters included)."""
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                  if a is not None}
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        return _own_nodes(list(body)), params
    if isinstance(scope, ast.ClassDef):
        return _own_nodes(list(scope.body)), set()
    assert isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
    parts: list[ast.AST] = [g.target for g in scope.generators]
    parts += [g.iter for g in scope.generators[1:]]
    parts += [cond for g in scope.generators for cond in g.ifs]
    parts += [scope.key, scope.value] if isinstance(scope, ast.DictComp) else [scope.elt]
    return _own_nodes(parts), set()


def _free_globals(scope: ast.AST, enclosing: frozenset[str], reads: _Reads) -> set[str]:
    """The globals a nested scope (and the scopes inside it) may read when it runs."""
    nodes, params = _scope_body(scope)
    declared = {n for node in nodes if isinstance(node, ast.Global) for n in node.names}
    local = (params | _stores(nodes)) - declared
    loads = _loads(nodes, reads)
    free = {n for n in loads - local if n in declared or n not in enclosing} | declared
    inner = frozenset(enclosing | local) if not isinstance(scope, ast.ClassDef) else enclosing
    for child in _nested(nodes):
        free |= _free_globals(child, inner, reads)
    return free


def _statement_reads(stmt: ast.AST, reads: _Reads) -> set[str]:
    """The globals running one module-level statement may read (the functions it defines included)."""
    nodes = _own_nodes([stmt])
    names = _loads(nodes, reads)
    for scope in _nested(nodes):
        names |= _free_globals(scope, frozenset(), reads)
    return names


def _plain_binds(stmt: ast.AST) -> set[str]:
    """What a module-level statement binds for sure once it has run (compound statements: nothing)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is not None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _first_line(stmt: ast.AST) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno] + [d.lineno for d in decorators])  # type: ignore[attr-defined]


def _index_of(body: list[ast.stmt], line: int | None) -> int | None:
    if line is None:
        return None
    for i, stmt in enumerate(body):
        if _first_line(stmt) <= line <= (stmt.end_lineno or stmt.lineno):
            return i
    return None


def _frames(exc: BaseException) -> list[tuple[types.FrameType, int]]:
    out, tb = [], exc.__traceback__
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


class Scene:
    """What the test side knows when an exception reaches it: the test's source and kind, the names
    the candidate may have supplied, and the check function (for the check phase)."""

    def __init__(self, source: str, *, mode: str, entry_point: str | None, prompt_names: set[str],
                 prompt_code: str | None, candidate_module: str | None = None) -> None:
        self.source, self.mode, self.entry_point = source, mode, entry_point
        self.prompt_names, self.prompt_code = prompt_names, prompt_code
        self.candidate_modules = frozenset({candidate_module or "solution"})

    def reachable(self, name: str) -> bool:
        """Whether a candidate's export can be what the test finds under ``name``."""
        if name == self.entry_point:
            return True
        return not (name in self.prompt_names or name in _BUILTINS or name.startswith("__") or name == "bind_global")

    def _prompt_reaches_candidate(self, reads: _Reads) -> bool:
        """Whether the prompt's own functions (run test-side) may read a name the candidate supplies."""
        tree = _parse(self.prompt_code or "", "exec")
        if tree is None:
            return True
        prompt_reads = _Reads(frozenset())
        names: set[str] = set()
        for stmt in tree.body:  # type: ignore[attr-defined]
            names |= _statement_reads(stmt, prompt_reads)
        return prompt_reads.dynamic or any(self.reachable(n) for n in names)

    def _hits(self, names: set[str], reads: _Reads) -> bool:
        if reads.dynamic or any(self.reachable(n) for n in names):
            return True
        return bool(names & self.prompt_names) and self._prompt_reaches_candidate(reads)

    def _touches(self, body: list[ast.stmt], upto: int | None, reads: _Reads, *, late: ast.AST | None = None) -> bool:
        """Whether running ``body[:upto + 1]`` may have read what the candidate supplied. The
        functions a statement defines count with the names bound before it (they may be called at
        once, by a decorator); ``late`` (the check function) counts with every name bound by the end."""
        bound: set[str] = set()
        for stmt in body[:len(body) if upto is None else upto + 1]:
            nodes = _own_nodes([stmt])
            names = _loads(nodes, reads)
            for scope in _nested(nodes):
                if scope is not late:
                    names |= _free_globals(scope, frozenset(), reads)
            if self._hits(names - bound, reads):
                return True
            bound |= _plain_binds(stmt)
        return late is not None and self._hits(_free_globals(late, frozenset(), reads) - bound, reads)

    def _tree(self) -> tuple[ast.AST, list[ast.stmt]] | None:
        tree = _parse(self.source, self.mode)
        if tree is None:
            return None
        if isinstance(tree, ast.Expression):
            return tree, [ast.Expr(tree.body, lineno=1, col_offset=0, end_lineno=tree.body.end_lineno)]
        return tree, list(tree.body)  # type: ignore[attr-defined]

    def test_fault(self, exc: BaseException) -> bool:
        """True when ``exc``, raised while the test's code ran with no request made, is the test's own."""
        if not _test_kind(exc):
            return False
        parsed = self._tree()
        if parsed is None:
            return False
        line = next((ln for frame, ln in _frames(exc) if frame.f_code.co_filename == "<test>"
                     and frame.f_code.co_name == "<module>"), None)
        index = _index_of(parsed[1], line)
        return index is not None and not self._touches(parsed[1], index, _Reads(self.candidate_modules))

    def module_clean(self) -> bool:
        """True when running the whole test module cannot have read what the candidate supplied
        (so that it left no ``check`` behind is the test's own doing)."""
        parsed = self._tree()
        return parsed is not None and not self._touches(parsed[1], None, _Reads(self.candidate_modules))

    def check_fault(self, exc: BaseException, check_fn: object) -> bool:
        """True when ``exc``, raised by ``check(candidate)`` with no request made, is the test's own:
        the module and check's globals are clean and the statements of check run so far (up to the
        one that raised) never touch its parameters (the candidate)."""
        if not _test_kind(exc):
            return False
        parsed = self._tree()
        code = getattr(check_fn, "__code__", None)
        if parsed is None or code is None or code.co_filename != "<test>":
            return False
        tree, body = parsed
        definition = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and _first_line(n) == code.co_firstlineno and n.name == code.co_name), None)
        if definition is None or self._touches(body, None, _Reads(self.candidate_modules), late=definition):
            return False
        line = next((ln for frame, ln in _frames(exc) if frame.f_code is code), None)
        if line is None:
            return True  # the call itself failed (check's signature): the candidate's value played no part
        index = _index_of(list(definition.body), line)
        if index is None:
            return False
        args = definition.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                  if a is not None}
        for stmt in definition.body[:index + 1]:
            if {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} & params:
                return False
        return True


def may_read_plain_exports(source: str, mode: str, plain_names: set[str], candidate_module: str) -> bool:
    """Whether test code may read a plain value the candidate exported (a constant it could steer
    the test's path with): it names one, reaches a namespace dynamically, or imports the candidate's
    module. A doubt is a yes."""
    try:
        tree = ast.parse(source, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    reads = _Reads(frozenset({candidate_module}))  # dynamic attributes, imports of the candidate's module
    names = _DYNAMIC - {"__import__"}
    for node in ast.walk(tree):
        reads.note(node)
        if isinstance(node, ast.Name) and (node.id in plain_names or node.id in names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) \
                    or first.value.split(".")[0] == candidate_module:
                return True
    return reads.dynamic


def broken_by_test(why: str) -> str:
    """The ``broken`` reason of a run whose test did what cannot cross the boundary: handed the
    candidate a value that may not cross (rpc.Peer.outgoing: the test's value, or the codec's
    limit), or reached for the candidate's process (rpc.NeedsInProcess). A candidate that steers a
    test there is caught across runs: a run that got past that point makes the others' ``broken`` an
    ``error``, and one met after the candidate could steer it (``after_answers``) is never broken on
    its own evidence (strategies/verifier/broken.py)."""
    return f"broken by the test, not the candidate: {why}"


def _test_kind(exc: BaseException) -> bool:
    """Exceptions that can be the test's own: not an assertion (the test said no), not a missing
    name (the candidate's miss), not memory (the candidate's exports take memory too), not an exit."""
    return isinstance(exc, Exception) and not isinstance(exc, (AssertionError, NameError, MemoryError))


def _parse(source: str, mode: str) -> ast.AST | None:
    try:
        return ast.parse(source, filename="<test>", mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
