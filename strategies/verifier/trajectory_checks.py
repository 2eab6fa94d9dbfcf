"""Trajectory tests. ``tool_calls`` and ``tool_result``: comparisons of trajectory data, run in the host;
``final_state``: the test's ``check(trajectory)``, run in the sandbox (``run_final_state``).

These checks read plain data the candidate's trajectory holds (see ``trajectory.py`` for what
counts as a call or a result); nothing of the candidate is executed, so the comparison runs here,
in the host, like a reference check. Values are compared with the reference comparators
(``reference.check_answer``: normalized text, numeric tolerance, RE2 regex) and exact JSON
equality: the rules of ``comparison.py`` in ``json`` mode (an int and a float are one JSON number
type, 34 == 34.0; a bool is never a number; NaN matches NaN; no tolerance). Every failure names
the first mismatch: "call 3: expected tool 'search' with query='x', got 'browse'".
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Callable, Sequence

from oracle.strategies.verifier import reference
from oracle.strategies.verifier.comparison import show, value_mismatch
from oracle.strategies.verifier.containment import describe, fault_outcome
from oracle.strategies.verifier.harness import TestOutcome, interpret, test_name
from oracle.strategies.verifier.trajectory import (CallRecord, IgnoredResult, ResultRecord, final_state_plan,
                                                   tool_calls, tool_results)
from oracle.tasks.task import Trajectory
from oracle.tasks.testspec import (ANY_OTHER_ARG, ArgComparator, ArgComparatorMode, ArgRule, ArgsMatch, ExpectedCall,
                                   FinalStateTest, ReferenceCheck, ToolCallsTest, ToolResultTest)

INTEGRITY = "trajectory"
"""Per-test label: a comparison of the trajectory's data in the host (no code ran)."""
SHOW = 60


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:  # keys of mixed types, huge ints, deep nesting
        raise ValueError(f"the value cannot be written as JSON text ({type(exc).__name__})") from None


def _show(value: Any) -> str:
    try:
        text = repr(value) if isinstance(value, str) else _text(value)
    except ValueError:
        return show(value)
    return text if len(text) <= SHOW else text[:SHOW] + "..."


_DIFFERS = "differs"
"""What the predicates return when no explanation is asked for (matching tries many pairs)."""


def _exact(got: Any, expected: Any) -> bool:
    """Exact JSON equality (see the module docstring)."""
    return value_mismatch(got, expected, 0.0, numbers="json") is None


def compare_value(got: Any, expected: Any, rule: ArgRule, explain: bool = True) -> str | None:
    """None when ``got`` matches ``expected`` under ``rule``, else what differs."""
    mode = rule.mode if isinstance(rule, ArgComparator) else rule
    if mode == "ignore":
        return None
    if mode == "exact":
        if _exact(got, expected):
            return None
        return f"expected {_show(expected)}, got {_show(got)}" if explain else _DIFFERS
    comparator = rule if isinstance(rule, ArgComparator) else ArgComparator(mode=rule)
    check = ReferenceCheck(mode=mode, rel_tol=comparator.rel_tol, abs_tol=comparator.abs_tol)
    try:
        got_text, expected_text = _text(got), _text(expected)
    except ValueError as exc:
        return f"{exc} ({mode})"
    verdict = reference.check_answer(got_text, expected_text, check)
    return None if verdict.passed else f"{verdict.message} ({mode})"


def _describe(call: ExpectedCall) -> str:
    if not call.args:
        return f"tool {call.tool!r}"
    shown = ", ".join(f"{k}={_show(v)}" for k, v in list(call.args.items())[:4])
    return f"tool {call.tool!r} with {shown}" + (", ..." if len(call.args) > 4 else "")


def _describe_got(call: CallRecord) -> str:
    if call.args_problem or not call.args:
        return repr(call.tool)
    shown = ", ".join(f"{k}={_show(v)}" for k, v in list(call.args.items())[:4])
    return f"{call.tool!r} with {shown}" + (", ..." if len(call.args) > 4 else "")


def args_mismatch(expected: dict[str, Any] | None, got: CallRecord, rules: ArgsMatch,
                  explain: bool = True) -> str | None:
    """None when the arguments match, else the first difference."""
    if expected is None or rules == "ignore":
        return None
    if got.args is None:
        return got.args_problem or "arguments could not be read"
    args = got.args
    for name in expected:
        if name not in args:
            return f"missing argument {name!r}"
    if rules != "subset" and not (isinstance(rules, dict) and rules.get(ANY_OTHER_ARG) == "ignore"):
        extra = sorted(set(args) - set(expected))
        if extra:
            return f"unexpected argument {extra[0]!r}"
    per_arg = rules if isinstance(rules, dict) else {}
    for name, value in expected.items():
        problem = _compared(lambda: compare_value(args[name], value, per_arg.get(name, "exact"), explain))
        if problem:
            return f"argument {name}: {problem}"
    return None


def _compared(compare: Callable[[], str | None]) -> str | None:
    """A comparison whose exception (a value the comparator did not expect: an overflowing
    integer, a lone surrogate RE2 cannot encode, nesting past the recursion limit) is a mismatch
    naming it, never a match and never a crash of the task: the pair simply does not match."""
    try:
        return compare()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return f"cannot be compared ({describe(exc)})"


def call_rules(expected: ExpectedCall, test_rules: ArgsMatch) -> ArgsMatch:
    """The argument rules for one expected call: its own, else the test's (per-argument rules
    narrowed to the arguments this call expects)."""
    if expected.args_match is not None:
        return expected.args_match
    if isinstance(test_rules, dict):
        return {k: v for k, v in test_rules.items() if (expected.args and k in expected.args) or k == ANY_OTHER_ARG}
    return test_rules


def call_mismatch(expected: ExpectedCall, got: CallRecord, test_rules: ArgsMatch, explain: bool = True,
                  rules: ArgsMatch | None = None) -> str | None:
    """None when the candidate's call is the expected one, else why not (``explain=False``: a bare
    marker, for the many trial pairs of a matching)."""
    if got.tool != expected.tool:
        return f"expected {_describe(expected)}, got {got.tool!r}" if explain else _DIFFERS
    problem = args_mismatch(expected.args, got, rules if rules is not None else call_rules(expected, test_rules),
                            explain)
    if problem and not explain:
        return problem
    if problem:
        return f"expected {_describe(expected)}, got {_describe_got(got)} ({problem})"
    return None


def _class_key(call: CallRecord) -> tuple[Any, ...]:
    """Calls with the same key compare the same with every expected call."""
    if call.args is None:
        return (call.tool, "problem", call.args_problem)
    try:
        return (call.tool, "args", json.dumps(call.args, sort_keys=True))
    except (TypeError, ValueError, RecursionError):
        return (call.tool, "call", call.number)


def compatible(expected: Sequence[ExpectedCall], got: Sequence[CallRecord], test_rules: ArgsMatch) -> list[list[int]]:
    """For each expected call, the indices of the candidate calls it matches. Identical candidate
    calls are compared once and only calls of the same tool are tried, so a 5,000-call run costs
    one comparison per distinct call, not per call."""
    classes: dict[tuple[Any, ...], list[int]] = {}
    for g, call in enumerate(got):
        classes.setdefault(_class_key(call), []).append(g)
    by_tool: dict[str | None, list[list[int]]] = {}
    for members in classes.values():
        by_tool.setdefault(got[members[0]].tool, []).append(members)
    out: list[list[int]] = []
    for e in expected:
        rules = call_rules(e, test_rules)
        fits: list[int] = []
        for members in by_tool.get(e.tool, []):
            if call_mismatch(e, got[members[0]], test_rules, explain=False, rules=rules) is None:
                fits.extend(members)
        out.append(sorted(fits))
    return out


def _invert(edges: list[list[int]], n_right: int) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(n_right)]
    for left, rights in enumerate(edges):
        for r in rights:
            out[r].append(left)
    return out


def _matching(edges: list[list[int]], n_right: int) -> tuple[int | None, list[int | None]]:
    """A matching of every left node to a distinct right node, by augmenting paths found breadth
    first (no recursion); stops at the first left node that cannot be matched. Returns that node
    (None when all are matched) and each left node's partner so far."""
    n_left = len(edges)
    left_of: list[int | None] = [None] * n_right
    right_of: list[int | None] = [None] * n_left
    for start in range(n_left):
        free = next((r for r in edges[start] if left_of[r] is None), None)
        if free is not None:  # the common case: a free partner, no search
            left_of[free], right_of[start] = start, free
            continue
        parent: dict[int, tuple[int, int | None]] = {}  # right -> (left that reached it, previous right)
        queue: deque[tuple[int, int | None]] = deque([(start, None)])
        seen_left = {start}
        end = None
        while queue and end is None:
            left, via = queue.popleft()
            for r in edges[left]:
                if r in parent:
                    continue
                parent[r] = (left, via)
                owner = left_of[r]
                if owner is None:
                    end = r
                    break
                if owner not in seen_left:
                    seen_left.add(owner)
                    queue.append((owner, r))
        if end is None:
            return start, right_of
        while end is not None:  # flip the path
            left, prev = parent[end]
            left_of[end], right_of[left] = left, end
            end = prev
    return None, right_of


def _outcome(test: ToolCallsTest | ToolResultTest, index: int, problem: str | None, passed: str) -> TestOutcome:
    name = test_name(test, index)  # type: ignore[arg-type]
    if problem is None:
        return TestOutcome(name, test.kind, "pass", passed, 0.0, test.weight, INTEGRITY)
    return TestOutcome(name, test.kind, "fail", problem[:400], 0.0, test.weight, INTEGRITY)


def _strict(test: ToolCallsTest, got: list[CallRecord]) -> str | None:
    expected = test.calls
    for i in range(max(len(expected), len(got))):
        if i >= len(got):
            return f"call {i + 1}: expected {_describe(expected[i])}, got no call (the candidate made {len(got)})"
        if i >= len(expected):
            return f"call {i + 1}: unexpected call to {got[i].tool!r} (expected {len(expected)} calls)"
        problem = call_mismatch(expected[i], got[i], test.args_match)
        if problem:
            return f"call {i + 1}: {problem}"
    return None


def _closest(expected: ExpectedCall, pool: Sequence[CallRecord], rules: ArgsMatch) -> str:
    same = [c for c in pool if c.tool == expected.tool]
    if not same:
        tools = sorted({str(c.tool) for c in pool})
        return f"no call to {expected.tool!r}" + (f" (tools called: {', '.join(tools[:6])})" if tools else "")
    first = same[0]
    return f"closest is call {first.number}: {call_mismatch(expected, first, rules)}"


def _ordered_subsequence(inner: Sequence[Any], outer: Sequence[Any], fits: Callable[[Any, Any], bool]) -> int | None:
    """Index in ``inner`` of the first item that cannot be placed, in order, in ``outer``; None when
    all can (earliest placement is optimal for a subsequence)."""
    pos = 0
    for i, item in enumerate(inner):
        while pos < len(outer) and not fits(item, outer[pos]):
            pos += 1
        if pos == len(outer):
            return i
        pos += 1
    return None


def _check_calls(test: ToolCallsTest, got: list[CallRecord]) -> str | None:
    expected, rules = test.calls, test.args_match
    if test.match == "strict":
        return _strict(test, got)
    fits = lambda e, g: call_mismatch(e, g, rules, explain=False) is None  # noqa: E731
    if test.match == "unordered" and len(got) != len(expected):
        return f"expected {len(expected)} calls in any order, the candidate made {len(got)}"
    if test.match == "subset" and len(got) > len(expected):
        return f"the candidate made {len(got)} calls; at most {len(expected)} (a subset of the expected) allowed"
    if test.match == "subset":
        if test.ordered:
            bad = _ordered_subsequence(got, expected, lambda g, e: fits(e, g))
            return None if bad is None else (f"call {got[bad].number}: {_describe_got(got[bad])} is not one of the "
                                             "expected calls in the expected order")
        bad, _ = _matching(_invert(compatible(expected, got, rules), len(got)), len(expected))
        return (None if bad is None
                else f"call {got[bad].number}: {_describe_got(got[bad])} is not one of the expected calls")
    if test.ordered:  # superset, in order
        bad = _ordered_subsequence(expected, got, fits)
        return None if bad is None else (f"expected call {bad + 1} ({_describe(expected[bad])}) not found in order; "
                                         + _closest(expected[bad], got, rules))
    bad, pairing = _matching(compatible(expected, got, rules), len(got))
    if bad is None:
        return None
    used = {g for g in pairing if g is not None}
    return (f"expected call {bad + 1} ({_describe(expected[bad])}) matches none of the candidate's calls; "
            + _closest(expected[bad], [c for k, c in enumerate(got) if k not in used] or got, rules))


def check_tool_calls(test: ToolCallsTest, index: int, trajectory: Trajectory) -> TestOutcome:
    got = tool_calls(trajectory)
    problem = _check_calls(test, got)
    how = test.match + (", ordered" if test.ordered else "")
    return _outcome(test, index, problem, f"{len(got)} calls match {len(test.calls)} expected ({how})")


def _subset(expected: Any, got: Any) -> str | None:
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"expected an object, got {_show(got)}"
        for key, value in expected.items():
            if key not in got:
                return f"missing key {key!r}"
            problem = _subset(value, got[key])
            if problem:
                return f"{key}: {problem}"
        return None
    return None if _exact(got, expected) else f"expected {_show(expected)}, got {_show(got)}"


def compare_result(content: str, test: ToolResultTest) -> str | None:
    """None when the tool's output matches, else what differs."""
    if test.match == "exact" and isinstance(test.expected, str):
        return None if content.strip() == test.expected.strip() else \
            f"expected {_show(test.expected.strip())}, got {_show(content.strip())}"
    if test.match in ("exact", "subset"):
        try:
            value = json.loads(content)
        except (ValueError, RecursionError) as exc:
            return f"the result is not valid JSON ({str(exc)[:80]}), expected {_show(test.expected)}"
        if test.match == "subset":
            return _subset(test.expected, value)
        return None if _exact(value, test.expected) else \
            f"expected {_show(test.expected)}, got {_show(value)}"
    mode: ArgComparatorMode = "normalized" if test.match == "normalized" else \
        "numeric" if test.match == "numeric" else "regex"
    return compare_value(content, test.expected, ArgComparator(mode=mode, rel_tol=test.rel_tol, abs_tol=test.abs_tol))


def select_result(test: ToolResultTest, counted: list[ResultRecord],
                  ignored: list[IgnoredResult]) -> tuple[ResultRecord | None, str]:
    """The result the test names, and a label for it (or None and why nothing was found)."""
    if test.tool_call_id is not None:
        label = f"result of call {test.tool_call_id!r}"
        found = next((r for r in counted if r.call_id == test.tool_call_id), None)
        near = [x for x in ignored if x.call_id == test.tool_call_id]
        if found is None:
            why = f"no {label} among the candidate's tool results"
    else:
        occurrence = test.occurrence or 1
        label = f"result {occurrence} of tool {test.tool!r}"
        of_tool = [r for r in counted if r.tool == test.tool]
        found = of_tool[occurrence - 1] if len(of_tool) >= occurrence else None
        near = [x for x in ignored if x.tool in (test.tool, None)]
        if found is None:
            why = f"no {label}: the tool has {len(of_tool)} counted result(s)"
    if found is not None:
        return found, label
    if near:
        why += "; not counted: " + "; ".join(f"step {x.step + 1} ({x.why})" for x in near[:3])
    return None, why


def check_tool_result(test: ToolResultTest, index: int, trajectory: Trajectory) -> TestOutcome:
    counted, ignored = tool_results(trajectory)
    found, label = select_result(test, counted, ignored)
    if found is None:
        return _outcome(test, index, label, "")
    problem = _compared(lambda: compare_result(found.content, test))
    return _outcome(test, index, f"{label} (step {found.step + 1}): {problem}" if problem else None,
                    f"{label} matches ({test.match})")


async def run(test: Any, index: int, trajectory: Trajectory, pool: Any, cfg: Any) -> TestOutcome:
    """One trajectory test on one candidate: data checks here, ``final_state`` in the sandbox. A data
    check that raises on the trajectory's values is that test's ``error`` (containment.py); a
    sandbox failure propagates, for the strategy to tell from the candidate's faults."""
    if isinstance(test, (ToolCallsTest, ToolResultTest)):
        try:
            if isinstance(test, ToolCallsTest):
                return check_tool_calls(test, index, trajectory)
            return check_tool_result(test, index, trajectory)
        except Exception as exc:  # noqa: BLE001 - the candidate's data broke the check: its test's error
            return fault_outcome(test, index, exc, integrity=INTEGRITY)
    return await run_final_state(test, index, trajectory, pool, cfg)


async def run_final_state(test: FinalStateTest, index: int, trajectory: Trajectory, pool: Any,
                          cfg: Any) -> TestOutcome:
    """``check(trajectory)`` in a fresh sandboxed process of ``pool`` (see ``final_state_plan``)."""
    import asyncio

    from oracle.sandbox.runs import run_in_pool

    try:
        plan = final_state_plan(test.code, trajectory, timeout_s=test.timeout_s or cfg.timeout_s,
                                output_limit=cfg.output_limit_bytes)
    except ValueError as exc:
        return TestOutcome(test_name(test, index), test.kind, "error", str(exc), 0.0, test.weight, "isolated")
    run_result = await asyncio.get_running_loop().run_in_executor(pool.executor, run_in_pool, pool, plan)
    return interpret(test, index, run_result, tolerance=0.0, memory_mb=cfg.memory_mb, integrity="isolated")
