"""The runnable test kinds a task may carry, and how a non-code answer is checked against a reference.

Kinds that run the candidate's code: ``assert`` (code that must run without error), ``call`` (an
expression whose value must equal ``expected``), ``io`` (stdin in, stdout compared) and ``check``
(code defining ``check(candidate)``, HumanEval style). Kinds that check an agent trajectory:
``tool_calls`` (the calls made), ``tool_result`` (what a tool returned) and ``final_state`` (code
defining ``check(trajectory)``, run in the sandbox). An unknown kind is rejected at load time, and
so is a trajectory check that cannot work (a bad pattern, a selector that names nothing). A
``repo_tests`` test runs a repository's own suite on a candidate's patch (``task.repository``).

``UNDEFINED`` is how JavaScript's ``undefined`` reads in Python: a ``call`` test's value compares
with ``expected`` as this object (never as None), and a library caller may expect it
(``CallTest(..., expected=UNDEFINED)``). It is the sandbox wire format's own object, named here
on first use so that importing this module loads none of the sandbox.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle.tasks.repository import relative_path_problem


def __getattr__(name: str) -> Any:
    """``UNDEFINED`` and its class ``Undefined``, from the wire format, when first asked for."""
    if name in ("UNDEFINED", "Undefined"):
        from oracle.sandbox.runtime import wire

        return getattr(wire, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _TestBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    """A short label shown in per-test outcomes (default: kind and index)."""
    timeout_s: float | None = Field(default=None, gt=0, le=600)
    """Wall-clock limit for this test; None takes the verifier's default."""
    weight: float = Field(default=1.0, ge=0, le=1e9, allow_inf_nan=False)
    """Share of the candidate's score this test carries (relative to the others). Finite and at
    most 1e9, so a sum of weights never overflows (1e308 weights used to score a pass as 0.0)."""


class AssertTest(_TestBase):
    """Code that runs after the candidate; it passes when it raises nothing."""

    kind: Literal["assert"]
    code: str = Field(min_length=1)


class CallTest(_TestBase):
    """``call`` is an expression (e.g. ``add(1, 2)``); its value must equal ``expected``."""

    kind: Literal["call"]
    call: str = Field(min_length=1)
    expected: Any
    tolerance: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Absolute tolerance for floats; None takes the verifier's default."""


class IoTest(_TestBase):
    """The program reads ``stdin`` and must print ``stdout``."""

    kind: Literal["io"]
    stdin: str = ""
    stdout: str
    whitespace: Literal["exact", "rstrip_lines", "collapse"] = "rstrip_lines"
    """exact: byte for byte; rstrip_lines: trailing spaces per line and trailing newlines ignored;
    collapse: every run of whitespace counts as one space and the ends are stripped."""


class CheckTest(_TestBase):
    """Code defining ``check(candidate)``; it is called with the entry point."""

    kind: Literal["check"]
    code: str = Field(min_length=1)


class PytestTest(_TestBase):
    """A pytest module (``code``) or a small test tree (``files``: relative path -> text), run by real
    pytest on the test side with the candidate importable as ``task.module`` (default ``solution``).

    One run for the whole suite: each collected test is one outcome (its node id, pytest's outcome,
    its duration), and the suite's ``weight`` is split equally over them. ``select`` narrows the run
    to node ids (``["test_x.py::test_a"]``) or a ``-k`` expression (``"slug and not unicode"``);
    ``timeout_s`` bounds the whole run. A ``code`` module is the file ``test_task.py``.
    """

    kind: Literal["pytest"]
    code: str | None = Field(default=None, min_length=1)
    files: dict[str, str] | None = None
    select: list[str] | str | None = None

    @model_validator(mode="after")
    def _checked(self) -> "PytestTest":
        if (self.code is None) == (self.files is None):
            raise ValueError("code: give exactly one of code (one test module) or files (a test tree)")
        files = self.test_files()
        if self.files is not None:
            if not files:
                raise ValueError("files: needs at least one file")
            if len(files) > MAX_PYTEST_FILES:
                raise ValueError(f"files: {len(files)} files; at most {MAX_PYTEST_FILES}")
            for name in files:
                problem = pytest_file_problem(name)
                if problem:
                    raise ValueError(f"files: {name!r} {problem}")
            dirs = {"/".join(name.split("/")[:i]) for name in files for i in range(1, name.count("/") + 1)}
            clash = sorted(dirs & set(files))
            if clash:
                raise ValueError(f"files: {clash[0]!r} is both a file and a directory")
        if isinstance(self.select, str) and not self.select.strip():
            raise ValueError("select: an empty -k expression")
        if isinstance(self.select, list):
            if not self.select:
                raise ValueError("select: an empty list selects nothing")
            for node_id in self.select:
                path = node_id.split("::", 1)[0]
                if path not in files:
                    raise ValueError(f"select: {node_id!r} names no file of this test (files: {sorted(files)})")
        problem = defines_no_test(files)
        if problem:
            raise ValueError(f"{'code' if self.code is not None else 'files'}: {problem}")
        return self

    def test_files(self) -> dict[str, str]:
        """The files the run writes: ``files``, or ``code`` as ``test_task.py``."""
        return {PYTEST_CODE_FILE: self.code} if self.code is not None else dict(self.files or {})


PYTEST_CODE_FILE = "test_task.py"
"""The file name a ``pytest`` test's ``code`` is written to (node ids start with it)."""
PYTEST_RESERVED_MODULES = frozenset({"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "pygments"})
"""Top-level names of the test side's own pytest: a task file or module may not shadow them."""
_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
_CONFIG_FILES = frozenset({"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"})
MAX_PYTEST_FILES = 200
MAX_PYTEST_DEPTH = 8


def pytest_file_problem(name: str) -> str | None:
    """Why ``name`` cannot be a file of a pytest test (None when it can): only plain relative paths
    of ordinary names, no configuration file (the run uses the verifier's own pytest settings), no
    name that shadows the test side's pytest."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return "is not a relative path (use forward slashes, no leading /)"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' part"
    if len(parts) > MAX_PYTEST_DEPTH:
        return f"is nested deeper than {MAX_PYTEST_DEPTH} directories"
    if not all(_PART.match(p) for p in parts):
        return "has a part that is not a plain name (letters, digits, _ . -; not starting with . or -)"
    if parts[-1] in _CONFIG_FILES:
        return "is a pytest configuration file; the verifier runs pytest with its own settings " \
               "(register markers and options in conftest.py)"
    top = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0]
    if len(parts) > 1 or parts[0].endswith(".py"):
        if top in PYTEST_RESERVED_MODULES:
            return f"would shadow the test side's own {top!r}"
    return None


def _test_name(name: str, in_class: bool) -> bool:
    return name.startswith("test") or (not in_class and name.startswith("Test"))


def _collectable_test(body: list[ast.stmt], local: frozenset[str], in_class: bool = False) -> bool:
    """Whether statements hold what pytest collects: a ``test*`` function; a ``Test*`` class (or a
    ``unittest.TestCase`` subclass) holding one or inheriting from a class that may; a ``test*`` /
    ``Test*`` name imported, assigned, or star-imported from one of the task's own modules
    (``local``). Looks into if/try/with/for blocks, never into function bodies."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test"):
                return True
        elif isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            unit = any(b.split(".")[-1] == "TestCase" for b in bases)
            if node.name.startswith("Test") or unit:
                inherits = any(b not in ("object", "TestCase", "unittest.TestCase") for b in bases)
                if inherits or _collectable_test(node.body, local, in_class=True):
                    return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            source = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                if alias.name == "*":
                    if source in local:
                        return True
                elif _test_name((alias.asname or alias.name).split(".")[-1], in_class):
                    return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and _test_name(t.id, in_class) for t in targets):
                return True
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            if any(_collectable_test(b, local, in_class) for b in blocks):
                return True
    return False


def _is_test_file(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py"))


def defines_no_test(files: dict[str, str]) -> str | None:
    """Why pytest would collect no test from ``files`` (None when it may): no ``test_*.py`` /
    ``*_test.py`` file, or none that defines a test. A file that does not parse here is given the
    benefit of the doubt (it may use a newer syntax than this interpreter): the run reports it."""
    candidates = [n for n in files if _is_test_file(n)]
    local = frozenset(n[:-3].replace("/", ".") for n in files if n.endswith(".py")) | \
        frozenset(n[:-3].rsplit("/", 1)[-1] for n in files if n.endswith(".py"))
    if not candidates:
        return "no test file: pytest collects test_*.py and *_test.py"
    for name in candidates:
        try:
            tree = ast.parse(files[name])
        except (SyntaxError, ValueError):
            return None
        if _collectable_test(tree.body, local):
            return None
    return ("defines no test: pytest collects functions named test* and methods test* of classes "
            "named Test*; " + ("this module has none" if len(candidates) == 1 else "none of "
                               f"{sorted(candidates)} has one"))


# -- trajectory checks ---------------------------------------------------------------------------
# Agent runs are checked on their steps. ``tool_calls`` and ``tool_result`` are comparisons of plain
# data (the host compares them; no code runs); ``final_state`` is test code, run in the sandbox.

MAX_EXPECTED_CALLS = 200
"""Matching calls in any order is a bipartite matching; this bounds it whatever the candidate did
(benchmarks/trajectory_checks_bench.py: the worst case stays within seconds)."""

ArgComparatorMode = Literal["exact", "normalized", "numeric", "regex", "ignore"]


class ArgComparator(BaseModel):
    """How one argument's value is compared with the expected value given in ``args``.

    exact: equal JSON values (1 and 1.0 are equal, true and 1 are not); normalized: as text, case,
    punctuation and whitespace ignored; numeric: the first number of each side within
    ``rel_tol``/``abs_tol``; regex: the expected value is a pattern that must match the whole text
    (RE2); ignore: the argument must be present, its value is not compared.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: ArgComparatorMode
    rel_tol: float = Field(default=1e-6, ge=0, allow_inf_nan=False)
    abs_tol: float = Field(default=1e-9, ge=0, allow_inf_nan=False)


ArgRule = Union[ArgComparatorMode, ArgComparator]
"""A bare mode name means that mode with default tolerances."""

ArgsMatch = Union[Literal["exact", "ignore", "subset"], dict[str, ArgRule]]
"""exact: the same arguments with equal values; ignore: arguments not compared; subset: every
expected argument present and equal, extra arguments allowed; a mapping: argument name ->
comparator, unnamed expected arguments compared exactly, and arguments the candidate adds refused
unless the mapping holds ``"*": "ignore"``."""

ANY_OTHER_ARG = "*"
"""In a per-argument mapping: the rule for arguments not expected (only ``ignore``: allow them)."""


def _rule_mode(rule: ArgRule) -> str:
    return rule if isinstance(rule, str) else rule.mode


def _check_arg_rules(args: dict[str, Any] | None, rules: ArgsMatch, where: str) -> None:
    """Per-argument comparators must name expected arguments, and their expected values must fit."""
    if not isinstance(rules, dict):
        return
    if args is None:
        raise ValueError(f"{where}args_match: names arguments, but the call gives no args")
    for name, rule in rules.items():
        if name == ANY_OTHER_ARG:
            if rule != "ignore":
                raise ValueError(f"{where}args_match.*: only 'ignore' (allow arguments not expected)")
            continue
        if name not in args:
            raise ValueError(f"{where}args_match.{name}: no argument {name!r} in the expected args")
        mode, value = _rule_mode(rule), args[name]
        if mode == "regex":
            if not isinstance(value, str):
                raise ValueError(f"{where}args.{name}: a regex comparator needs a string pattern")
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{where}args.{name}: invalid regular expression: {exc}") from None
        if mode == "numeric" and not (isinstance(value, (int, float)) and not isinstance(value, bool)) \
                and not (isinstance(value, str) and _NUMBER_TEXT.search(value)):
            raise ValueError(f"{where}args.{name}: a numeric comparator needs a number")


_NUMBER_TEXT = re.compile(r"\d")


class ExpectedCall(BaseModel):
    """One expected tool call: the tool's name and, optionally, its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    """Expected arguments; None: any arguments (only the tool name is compared)."""
    args_match: ArgsMatch | None = None
    """This call's argument mode; None takes the test's ``args_match``."""


class ToolCallsTest(_TestBase):
    """The candidate's tool calls compared with an expected list.

    match: ``strict`` same calls in the same order; ``unordered`` the same multiset of calls;
    ``subset`` every candidate call is one of the expected calls (each used once); ``superset``
    every expected call appears among the candidate's, extra calls allowed. ``ordered: true`` makes
    subset and superset keep the expected order (a subsequence).
    """

    kind: Literal["tool_calls"]
    calls: list[ExpectedCall] = Field(max_length=MAX_EXPECTED_CALLS)
    match: Literal["strict", "unordered", "subset", "superset"] = "strict"
    ordered: bool = False
    args_match: ArgsMatch = "exact"

    @model_validator(mode="after")
    def _consistent(self) -> "ToolCallsTest":
        if self.ordered and self.match not in ("subset", "superset"):
            raise ValueError(f"ordered: applies to match subset or superset; match {self.match!r} "
                             + ("is ordered already" if self.match == "strict" else "ignores order by definition"))
        if isinstance(self.args_match, dict):
            named = {k for call in self.calls for k in (call.args or {})}
            unknown = sorted(set(self.args_match) - named - {ANY_OTHER_ARG})
            if unknown:
                raise ValueError(f"args_match.{unknown[0]}: no expected call has an argument {unknown[0]!r}")
            for i, call in enumerate(self.calls):
                if call.args_match is None and call.args is not None:
                    _check_arg_rules(call.args, {k: v for k, v in self.args_match.items()
                                                 if k in call.args or k == ANY_OTHER_ARG},
                                     f"calls[{i}].")
        for i, call in enumerate(self.calls):
            if call.args_match is not None:
                _check_arg_rules(call.args, call.args_match, f"calls[{i}].")
        return self


ResultMatch = Literal["exact", "normalized", "numeric", "regex", "subset"]


class ToolResultTest(_TestBase):
    """What a tool returned, selected by ``tool_call_id`` or by ``tool`` and ``occurrence``.

    match: ``exact`` equal stripped text, or equal JSON values when ``expected`` is not a string;
    ``normalized``, ``numeric`` and ``regex`` as for ``args_match``; ``subset``: the result parses as
    a JSON object holding every key of ``expected`` with an equal value (nested objects likewise).
    """

    kind: Literal["tool_result"]
    tool_call_id: str | None = Field(default=None, min_length=1)
    tool: str | None = Field(default=None, min_length=1)
    occurrence: int | None = Field(default=None, ge=1, le=1_000_000)
    """1 for the tool's first result (default), 2 for its second..."""
    expected: Any
    match: ResultMatch = "exact"
    rel_tol: float = Field(default=1e-6, ge=0, allow_inf_nan=False)
    abs_tol: float = Field(default=1e-9, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _selector(self) -> "ToolResultTest":
        if (self.tool_call_id is None) == (self.tool is None):
            raise ValueError("tool_call_id: give exactly one of tool_call_id or tool (with occurrence)")
        if self.tool_call_id is not None and self.occurrence is not None:
            raise ValueError("occurrence: goes with tool, not with tool_call_id")
        if self.match == "regex":
            if not isinstance(self.expected, str):
                raise ValueError("expected: match regex needs a string pattern")
            try:
                re.compile(self.expected)
            except re.error as exc:
                raise ValueError(f"expected: invalid regular expression: {exc}") from None
        if self.match == "subset" and not isinstance(self.expected, dict):
            raise ValueError("expected: match subset needs a JSON object")
        if self.match == "numeric" and first_digit(self.expected) is None:
            raise ValueError("expected: match numeric needs a number")
        return self


def first_digit(value: Any) -> bool | None:
    """True when ``value`` is a number or text holding a digit, else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    return True if isinstance(value, str) and _NUMBER_TEXT.search(value) else None


class FinalStateTest(_TestBase):
    """Code defining ``check(trajectory)``, run in the sandbox on the trajectory as JSON.

    ``trajectory`` is ``{"id", "answer", "output", "steps": [{"type", "role", "tool", "content",
    "arguments", "args", "tool_call_id", "counted"}]}`` (``args``: the arguments decoded from JSON, or
    None; ``counted``: for a tool result, whether the verifier's trust model counts it as the
    tool's output). The check passes when it returns without raising and does not return False.
    """

    kind: Literal["final_state"]
    code: str = Field(min_length=1)

    @field_validator("code")
    @classmethod
    def _defines_check(cls, code: str) -> str:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError) as exc:
            raise ValueError(f"does not parse as Python: {exc}") from None
        if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "check" for n in tree.body):
            raise ValueError("must define check(trajectory)")
        return code


# -- a repository's own test suite ----------------------------------------------------------------

MAX_NODE_IDS = 10_000
"""SWE-bench's largest instances list a few thousand pass-to-pass tests; far more is a mistake."""
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test"})


def runs_pytest(command: list[str] | None) -> bool:
    """Whether ``command`` is pytest (``pytest ...``, ``py.test ...``, ``python -m pytest ...``): its
    own report is read then; another runner must write JUnit XML (``junit_xml``)."""
    if command is None:
        return True
    program = command[0].rsplit("/", 1)[-1]
    if program in _PYTEST_PROGRAMS:
        return True
    return program.startswith("python") and len(command) >= 3 and command[1] == "-m" and command[2] == "pytest"


def _node_id_problem(node_id: Any) -> str | None:
    if not isinstance(node_id, str) or not node_id.strip():
        return "an empty node id"
    if "\x00" in node_id or "\n" in node_id or "\r" in node_id:
        return f"{node_id!r} holds a NUL or newline character"
    return None


class RepoTestsTest(_TestBase):
    """The repository's own tests, run in the candidate's tree after its patch and ``task.test_patch``.

    ``fail_to_pass``: node ids that must pass with the fix (they fail at the base commit);
    ``pass_to_pass``: node ids that must keep passing. ``resolved`` is SWE-bench's rule: every
    fail-to-pass test passes and no pass-to-pass test fails. ``command`` (default: pytest with the
    node ids) is an argument list run at the repository root (``task.repository.subdir`` when set);
    a runner that is not pytest reports through JUnit XML at ``junit_xml`` (relative to that root).
    ``timeout_s`` bounds the whole run.
    """

    kind: Literal["repo_tests"]
    command: list[str] | None = Field(default=None, min_length=1, max_length=1000)
    fail_to_pass: list[str] = Field(default_factory=list, max_length=MAX_NODE_IDS)
    pass_to_pass: list[str] = Field(default_factory=list, max_length=MAX_NODE_IDS)
    junit_xml: str | None = None

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for i, arg in enumerate(value):
            if "\x00" in arg:
                raise ValueError(f"[{i}]: an argument cannot hold a NUL character")
        if not value[0].strip():
            raise ValueError("[0]: the program is empty")
        return value

    @field_validator("fail_to_pass", "pass_to_pass")
    @classmethod
    def _node_ids(cls, value: list[str]) -> list[str]:
        for i, node_id in enumerate(value):
            problem = _node_id_problem(node_id)
            if problem:
                raise ValueError(f"[{i}]: {problem}")
        dupes = sorted(n for n, count in Counter(value).items() if count > 1)
        if dupes:
            raise ValueError(f"{dupes[0]!r} is listed twice")
        return value

    @field_validator("junit_xml")
    @classmethod
    def _junit_xml(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = relative_path_problem(value)
        if problem:
            raise ValueError(f"{value!r} {problem}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "RepoTestsTest":
        if not self.fail_to_pass and not self.pass_to_pass:
            raise ValueError("fail_to_pass: a repo_tests test needs at least one node id in fail_to_pass or "
                             "pass_to_pass")
        both = sorted(set(self.fail_to_pass) & set(self.pass_to_pass))
        if both:
            raise ValueError(f"pass_to_pass: {both[0]!r} is in fail_to_pass too; a test is one or the other")
        if self.command is None and self.junit_xml is not None:
            raise ValueError("junit_xml: names the report a custom command writes; the default (pytest) "
                             "reports on its own")
        if self.command is not None and not runs_pytest(self.command) and self.junit_xml is None:
            raise ValueError(f"junit_xml: the command {self.command[0]!r} is not pytest; give the JUnit XML "
                             "report path it writes (relative to the repository root)")
        return self

    def node_ids(self) -> list[str]:
        """Every required node id: fail-to-pass first, then pass-to-pass."""
        return [*self.fail_to_pass, *self.pass_to_pass]


TRAJECTORY_KINDS = frozenset({"tool_calls", "tool_result", "final_state"})
"""Kinds that check an agent's steps rather than run the candidate's code."""


TestCase = Annotated[Union[AssertTest, CallTest, IoTest, CheckTest, PytestTest, ToolCallsTest, ToolResultTest,
                           FinalStateTest, RepoTestsTest], Field(discriminator="kind")]
REPO_KINDS = frozenset({"repo_tests"})
"""Kinds that run a repository's own tests on a candidate's patch (task.repository)."""
TEST_KINDS = frozenset({"assert", "call", "io", "check", "pytest"}) | TRAJECTORY_KINDS | REPO_KINDS

ReferenceMode = Literal["contains", "exact", "normalized", "numeric", "regex", "set"]


class ReferenceCheck(BaseModel):
    """How an answer that is not code is compared with ``task.reference``.

    First the part of the reply to compare: ``answer_pattern`` (a regex; its group named
    ``answer``, else group 1, else the whole match, of the LAST match), or ``extract: final`` (the
    last ``\\boxed{...}``, else the last "the answer is X" / "final answer: X" / "answer: X", else
    the last non-empty line), else (``extract: whole``, the default) the whole reply. Extraction
    that finds nothing fails the candidate with that reason.

    Then the mode. contains (the default): the reference's words appear whole in the normalized
    answer, and no negation ("not", "never", "n't" ...) or alternatives/hedge cue ("or", "either",
    "maybe" ...) stands outside them; normalized: case, whitespace and punctuation at word edges
    ignored, never a sign, operator, digit or decimal point; exact: equal stripped strings;
    numeric: the first number in the answer (``number: last``: the last) within
    ``rel_tol``/``abs_tol`` of the reference's (a number that cannot be read without guessing, such
    as ``1,5`` or ``10²`` or an em dash before it, is refused with the reason); regex: the
    reference is a pattern that must match the whole (stripped) answer; set: both split on
    ``separator`` and compared as normalized sets, order ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: ReferenceMode = "contains"
    rel_tol: float = Field(default=1e-6, ge=0, allow_inf_nan=False)
    abs_tol: float = Field(default=1e-9, ge=0, allow_inf_nan=False)
    separator: str = Field(default=",", min_length=1)
    extract: Literal["whole", "final"] = "whole"
    """Which part of the reply is compared: all of it, or its final answer (see above)."""
    answer_pattern: str | None = Field(default=None, min_length=1, max_length=10_000)
    """A regex (Python ``re`` syntax, run on RE2 when it can) whose last match is the answer."""
    number: Literal["first", "last"] = "first"
    """numeric only: which number of the answer is read."""

    @field_validator("answer_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ReferenceCheck":
        if self.answer_pattern is not None and self.extract != "whole":
            raise ValueError("extract: give answer_pattern or extract: final, not both")
        if "number" in self.model_fields_set and self.mode != "numeric":
            raise ValueError(f"number: only mode numeric reads a number (mode is {self.mode!r})")
        return self
