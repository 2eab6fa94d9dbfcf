"""Trajectory checks: time per check for realistic and adversarial sizes (prints figures, asserts nothing).

    python benchmarks/trajectory_checks_bench.py

Cases: a 40-step agent run (strict and unordered), unordered matching where a greedy pairing
fails and augmenting paths are needed, and the largest expected list a test may hold
(MAX_EXPECTED_CALLS) against a candidate with five times as many calls.
"""

from __future__ import annotations

import random
import time

from oracle.strategies.verifier.trajectory_checks import check_tool_calls, check_tool_result
from oracle.tasks.task import Trajectory
from oracle.tasks.testspec import MAX_EXPECTED_CALLS, ToolCallsTest, ToolResultTest


def _call(tool: str, args: dict) -> dict:
    return {"type": "tool_call", "role": "assistant", "tool": tool, "arguments": args}


def _time(label: str, fn, repeat: int = 5) -> None:
    best = float("inf")
    outcome = None
    for _ in range(repeat):
        start = time.perf_counter()
        outcome = fn()
        best = min(best, time.perf_counter() - start)
    print(f"{label:<58} {best * 1000:9.2f} ms  ({outcome.outcome})")


def main() -> None:
    rnd = random.Random(5)
    tools = ["search", "open", "read", "write", "run_tests"]
    expected = [{"tool": rnd.choice(tools), "args": {"q": f"v{i}", "n": i}} for i in range(20)]
    steps = []
    for e in expected:
        steps.append(_call(e["tool"], e["args"]))
        steps.append({"type": "tool_result", "role": "tool", "tool": e["tool"], "content": '{"ok": true}'})
    agent = Trajectory(id="a", steps=steps)
    shuffled = Trajectory(id="b", steps=rnd.sample([s for s in steps if s["type"] == "tool_call"], 20))
    _time("strict, 20 calls / 40 steps", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=expected), 0, agent))
    _time("unordered, 20 calls shuffled", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=expected, match="unordered"), 0, shuffled))
    _time("tool_result subset, 20 results", lambda: check_tool_result(
        ToolResultTest(kind="tool_result", tool="search", expected={"ok": True}, match="subset"), 0, agent))
    n = MAX_EXPECTED_CALLS
    loose_first = [{"tool": "s"}] * (n // 2) + [{"tool": "s", "args": {"k": i}} for i in range(n // 2)]
    chain = Trajectory(id="c", steps=[_call("s", {"k": i}) for i in range(n // 2)] +
                       [_call("s", {"k": -i - 1}) for i in range(n // 2)])
    _time(f"unordered, {n} calls, greedy fails (augmenting paths)", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=loose_first, match="unordered"), 0, chain), repeat=2)
    big = [{"tool": "s", "args": {"k": i}} for i in range(MAX_EXPECTED_CALLS)]
    many = Trajectory(id="d", steps=[_call("s", {"k": i % (MAX_EXPECTED_CALLS * 5)})
                                     for i in range(MAX_EXPECTED_CALLS * 5)])
    _time(f"superset, {MAX_EXPECTED_CALLS} expected vs {MAX_EXPECTED_CALLS * 5} calls", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=big, match="superset"), 0, many), repeat=1)
    _time(f"superset ordered, {MAX_EXPECTED_CALLS} vs {MAX_EXPECTED_CALLS * 5}", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=big, match="superset", ordered=True), 0, many), repeat=1)
    anyargs = [{"tool": "s"}] * MAX_EXPECTED_CALLS
    _time(f"superset, {MAX_EXPECTED_CALLS} any-argument calls vs {MAX_EXPECTED_CALLS * 5}", lambda: check_tool_calls(
        ToolCallsTest(kind="tool_calls", calls=anyargs, match="superset"), 0, many), repeat=1)


if __name__ == "__main__":
    main()
