"""A corpus of malformed and hostile task files, written by hand for the hostile-input tests.

Each entry is ``name -> (file suffix, bytes, a fragment the error must contain)``; the fragment is
None where any clear bad-input message will do. Nothing here comes from a reserved record.
"""

from __future__ import annotations

import json
from typing import Any

from tests.data.tasks import code_task, open_task


def _task_with(**task: Any) -> dict[str, Any]:
    data = open_task()
    data["task"].update(task)
    return data


def _with_messages(messages: Any) -> bytes:
    data = open_task()
    data["trajectories"] = [{"id": "a", "messages": messages}]
    return json.dumps(data).encode()


def _billion_laughs() -> bytes:
    lines = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*l{i - 1}"] * 9)
        lines.append(f"  l{i}: &l{i} [{refs}]")
    return ("task:\n  id: t\n  prompt: p\n  metadata:\n" + "\n".join("  " + x for x in lines)
            + "\ntrajectories:\n  - id: a\n    answer: x\n").encode()


def _deep_metadata(depth: int) -> bytes:
    return json.dumps(_task_with(metadata={"x": json.loads("[" * depth + "]" * depth)})).encode()


def corpus() -> dict[str, tuple[str, bytes, str | None]]:
    good = json.dumps(code_task()).encode()
    return {
        "binary_json": (".json", bytes(range(256)) * 8, "not UTF-8"),
        "latin1_json": (".json", good.replace(b"Return", "R\u00e9turn".encode("latin-1")), "not UTF-8"),
        "binary_yaml": (".yaml", b"\x89PNG\r\n\x1a\n\x00\x00\x00", None),
        "empty_json": (".json", b"", "invalid JSON"),
        "truncated_json": (".json", good[: len(good) // 2], "invalid JSON"),
        "json_scalar": (".json", b"42", "expected an object"),
        "json_null": (".json", b"null", "expected an object"),
        "deep_array": (".json", b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        "deep_object": (".json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
        "deep_metadata": (".json", _deep_metadata(100), "nested deeper than 64"),
        "deep_yaml": (".yaml", b"a: " + b"[" * 20_000 + b"]" * 20_000, None),
        "huge_int": (".json", b'{"task": {"id": "t", "prompt": "p", "metadata": {"n": ' + b"7" * 5000
                     + b'}}, "trajectories": [{"id": "a"}]}', "digits"),
        "huge_int_yaml": (".yaml", b"task:\n  id: t\n  prompt: p\n  metadata:\n    n: " + b"7" * 5000
                          + b"\ntrajectories:\n  - id: a\n", None),
        "messages_number": (".json", _with_messages(5), "trajectories[0].messages"),
        "messages_string": (".json", _with_messages("hello"), "trajectories[0].messages"),
        "message_not_object": (".json", _with_messages([["user", "hi"]]), "trajectories[0].messages[0]"),
        "message_role_number": (".json", _with_messages([{"role": 7}]), "messages[0].role"),
        "tool_calls_string": (".json", _with_messages([{"role": "assistant", "tool_calls": "call"}]),
                              "messages[0].tool_calls"),
        "tool_call_number": (".json", _with_messages([{"role": "assistant", "tool_calls": [3]}]),
                             "messages[0].tool_calls[0]"),
        "function_list": (".json", _with_messages([{"role": "assistant", "tool_calls": [{"function": [1]}]}]),
                          "tool_calls[0].function"),
        "function_name_object": (".json", _with_messages(
            [{"role": "assistant", "tool_calls": [{"function": {"name": {"x": 1}}}]}]), "function.name"),
        "content_parts_numbers": (".json", _with_messages([{"role": "user", "content": [1, 2]}]),
                                  "messages[0].content"),
        "bare_message_list_bad": (".json", json.dumps({"task": {"id": "t", "prompt": "p"},
                                                       "trajectories": [[{"content": "no role"}]]}).encode(),
                                  "trajectories[0].messages[0].role"),
        "infinite_test_weight": (".json", good.replace(b'"expected": 5', b'"expected": 5, "weight": Infinity'),
                                 "task.tests[0].weight"),
        "huge_test_weight": (".json", good.replace(b'"expected": 5', b'"expected": 5, "weight": 1e308'),
                             "task.tests[0].weight"),
        "nan_tolerance": (".json", good.replace(b'"expected": 5', b'"expected": 5, "tolerance": NaN'),
                          "task.tests[0].tolerance"),
        "infinite_rel_tol": (".json", json.dumps(_task_with(reference="4", reference_check={
            "mode": "numeric", "rel_tol": float("inf")})).encode(), "reference_check.rel_tol"),
        "nan_criterion_weight": (".json", json.dumps(_task_with(criteria=[
            {"criterion": "polite", "weight": float("nan")}])).encode(), "task.criteria[0].weight"),
        "empty_separator": (".json", json.dumps(_task_with(reference="a,b", reference_check={
            "mode": "set", "separator": ""})).encode(), "reference_check.separator"),
        "nan_min_confidence": (".json", json.dumps(_task_with(questions=[
            {"id": "q", "type": "likelihood", "instructions": "ok?", "min_confidence": float("nan")}])).encode(),
            "min_confidence"),
        "billion_laughs": (".yaml", _billion_laughs(), "YAML alias"),
        "python_tag": (".yaml", b"task: !!python/object/apply:os.system ['true']\ntrajectories: []\n",
                       "python/object/apply"),
        "yaml_recursive_alias": (".yaml", b"task: &a {id: t, prompt: p, metadata: {self: *a}}\n"
                                          b"trajectories: [{id: a}]\n", None),
        "too_many_trajectories": (".json", json.dumps({"task": {"id": "t", "prompt": "p"}, "trajectories": [
            {"id": f"c{i}"} for i in range(10_001)]}).encode(), "at most 10000"),
        "duplicate_ids_many": (".json", json.dumps({"task": {"id": "t", "prompt": "p"}, "trajectories": [
            {"id": "same"} for _ in range(9_000)]}).encode(), "duplicate trajectory ids"),
        "unknown_suffix": (".txt", good, "unsupported file type"),
        "jsonl_bad_line": (".jsonl", good + b"\n\xff\xfe\n", "line 2"),
    }
