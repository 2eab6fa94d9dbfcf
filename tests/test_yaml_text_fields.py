"""A YAML task's text fields take an unquoted scalar as the text it was written as (issue 29):
``reference: 4`` is "4", not "Input should be a valid string"; ``1.10`` is "1.10", ``no`` "no",
``010`` "010", ``12:30`` "12:30". Fields typed Any keep what YAML resolved; JSON is untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.errors import TaskValidationError
from oracle.tasks.files import load_tasks

ROOT = Path(__file__).resolve().parent.parent


def task_file(tmp_path: Path, body: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def one(tmp_path: Path, body: str):
    [item] = load_tasks(task_file(tmp_path, body))
    return item


@pytest.mark.parametrize("written,resolved", [
    ("4", 4), ("1.10", 1.1), ("no", False), ("010", 8), ("12:30", 750), ("2024-01-31", None), ("yes", True),
    ("0x1F", 31), ("1_000", 1000), (".inf", float("inf")), ("-0", 0), ("+5", 5), ("off", False)])
def test_a_text_field_takes_the_scalar_as_written(tmp_path, written, resolved):
    if resolved is not None:
        assert yaml.safe_load(f"x: {written}")["x"] == resolved  # what PyYAML would have made of it
    item = one(tmp_path, f"task:\n  id: t\n  prompt: What is it?\n  reference: {written}\n"
                         f"trajectories:\n  - {{id: a, answer: {written}}}\n")
    assert item.task.reference == written and item.trajectories[0].answer == written


def test_fields_typed_any_keep_the_resolved_value(tmp_path):
    item = one(tmp_path, """\
task:
  id: calls
  prompt: "def f(): ..."
  entry_point: f
  tests:
    - {kind: call, call: "f()", expected: 010, name: 12:30}
    - {kind: call, call: "f()", expected: no}
    - {kind: call, call: "f()", expected: 1.10}
    - {kind: io, stdin: 1.10, stdout: no}
trajectories:
  - {id: 1, code: "def f(): return 8"}
""")
    call, falsy, floaty, io = item.task.tests
    assert (call.expected, call.name) == (8, "12:30")
    assert falsy.expected is False and floaty.expected == 1.1
    assert (io.stdin, io.stdout) == ("1.10", "no")
    assert item.trajectories[0].id == "1"


def test_mapping_keys_that_want_text_take_theirs(tmp_path):
    item = one(tmp_path, """\
task:
  id: t
  prompt: Is the reply polite?
  questions:
    - {id: q, type: likelihood, instructions: Is it polite?, scores: {yes: 5, no: 1}}
trajectories:
  - {id: a, answer: Thanks!}
""")
    assert item.task.questions[0].scores == {"yes": 5, "no": 1}


def test_aliases_and_merge_keys(tmp_path):
    item = one(tmp_path, """\
task:
  id: t
  prompt: "def f(): ..."
  reference: &n 010
  tests:
    - {kind: call, call: "f()", expected: *n}
trajectories:
  - &first {id: a, answer: 010}
  - {<<: *first, id: b}
""")
    assert item.task.reference == "010" and item.task.tests[0].expected == 8  # one anchor, two readings
    assert [(t.id, t.answer) for t in item.trajectories] == [("a", "010"), ("b", "010")]


def test_a_list_of_tasks_in_one_file(tmp_path):
    items = load_tasks(task_file(tmp_path, """\
- task: {id: one, prompt: p, reference: 1.10}
  trajectories: [{id: a, answer: "1.1"}]
- task: {id: two, prompt: p, reference: 12:30}
  trajectories: [{id: a, answer: no}]
"""))
    assert [(i.task.reference, i.trajectories[0].answer) for i in items] == [("1.10", "1.1"), ("12:30", "no")]


@pytest.mark.parametrize("body", [
    'task:\n  id: t\n  prompt: p\n  reference: !!int 4\ntrajectories:\n  - {id: a, answer: "4"}\n',  # asked for an int
    'task:\n  id: t\n  prompt: p\n  reference: [4]\ntrajectories:\n  - {id: a, answer: "4"}\n',  # not a scalar
])
def test_what_was_not_written_as_plain_text_still_fails_naming_the_field(tmp_path, body):
    with pytest.raises(TaskValidationError) as err:
        load_tasks(task_file(tmp_path, body))
    assert "task.reference" in str(err.value) and "valid string" in str(err.value)


def test_null_stays_no_value(tmp_path):
    assert one(tmp_path, "task: {id: t, prompt: p, reference: ~}\ntrajectories: [{id: a, answer: x}]\n"
               ).task.reference is None


def test_other_errors_are_still_reported_with_their_line(tmp_path):
    path = task_file(tmp_path, "task:\n  id: 7\n  prompt: p\n  reference: 4\n  refrence: 4\n"
                               "trajectories:\n  - {id: a, answer: 4}\n")
    with pytest.raises(TaskValidationError) as err:
        load_tasks(path)
    message = str(err.value)
    assert "task.refrence: unknown key" in message and "line 5" in message
    assert "valid string" not in message  # the text fields were fixed; only the real error is left


def test_a_json_file_is_untouched(tmp_path):
    path = task_file(tmp_path, json.dumps({"task": {"id": "t", "prompt": "p", "reference": 4},
                                           "trajectories": [{"id": "a", "answer": "4"}]}), "task.json")
    with pytest.raises(TaskValidationError) as err:
        load_tasks(path)
    assert "task.reference: Input should be a valid string" in str(err.value)


_PLAIN = st.one_of(
    st.integers(min_value=-10**12, max_value=10**12).map(str),
    st.integers(min_value=0, max_value=99999).map(lambda n: f"0{n:o}"),            # octal-looking
    st.tuples(st.integers(1, 99), st.integers(0, 59)).map(lambda t: f"{t[0]}:{t[1]:02d}"),  # sexagesimal
    st.tuples(st.integers(0, 999), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]:03d}0"),  # trailing zero
    st.sampled_from(["yes", "no", "on", "off", "true", "False", "Y", "n", "1e5", "1.5e-3", "2024-02-29",
                     ".5", "-.inf", ".NaN", "0b1010", "0x_ff", "1_0"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_PLAIN)
def test_every_plain_scalar_is_read_back_as_written(tmp_path, written):
    if isinstance(yaml.safe_load(f"x: {written}")["x"], str):
        return  # PyYAML reads it as text already
    item = one(tmp_path, f"task:\n  id: {written}\n  prompt: p\n  reference: {written}\n"
                         f"trajectories:\n  - {{id: {written}, answer: {written}}}\n")
    assert (item.task.id, item.task.reference, item.trajectories[0].id, item.trajectories[0].answer) == (
        written, written, written, written)


@pytest.mark.slow
def test_oracle_evaluate_checks_a_numeric_yaml_reference(tmp_path):
    path = task_file(tmp_path, "task:\n  id: sum\n  prompt: What is 2 + 2?\n  reference: 4\n"
                               "trajectories:\n  - {id: a, answer: 4}\n  - {id: b, answer: The sum is 4.}\n"
                               "  - {id: c, answer: 5}\n")
    out = subprocess.run([sys.executable, "-m", "oracle", "evaluate", str(path), "--json"], capture_output=True,
                         check=False, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    result = result if "candidates" in result else result["result"]  # a batch-shaped row nests it once more
    passed = {c["id"]: c["passed"] for c in result["candidates"]}
    assert passed == {"a": True, "b": True, "c": False}, out.stdout[:2000]
