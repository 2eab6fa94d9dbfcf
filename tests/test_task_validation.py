"""Bad input is rejected before anything runs, with the field (and file line) named."""

from __future__ import annotations

import json

import pytest

from oracle.errors import TaskValidationError
from oracle.task import TaskInput
from oracle.task_file import iter_task_lines, load_tasks, parse_task
from tests.data.tasks import code_task, open_task, question_task


def _bad(data, field_fragment):
    with pytest.raises(TaskValidationError) as info:
        parse_task(data)
    assert field_fragment in str(info.value), str(info.value)
    return info.value


def test_valid_tasks_load():
    for data in (code_task(), question_task(), open_task()):
        item = parse_task(data)
        assert isinstance(item, TaskInput)


def test_unknown_key_is_named():
    data = code_task()
    data["task"]["promt"] = "typo"
    err = _bad(data, "task.promt")
    assert "unknown key" in str(err)


def test_unknown_trajectory_key_is_named():
    data = code_task()
    data["trajectories"][0]["anwser"] = "x"
    _bad(data, "trajectories[0].anwser")


def test_wrong_type_is_named():
    data = code_task(difficulty="impossible")
    _bad(data, "task.difficulty")


def test_duplicate_trajectory_ids():
    data = code_task()
    data["trajectories"][1]["id"] = "good"
    _bad(data, "duplicate trajectory ids ['good']")


def test_negative_weight_and_all_zero_weights():
    _bad(code_task(criteria=[{"criterion": "is correct", "weight": -1}]), "task.criteria[0].weight")
    _bad(code_task(criteria=[{"criterion": "a", "weight": 0}, {"criterion": "b", "weight": 0}]),
         "at least one criterion weight must be above 0")


def test_unknown_test_kind():
    err = _bad(code_task(tests=[{"kind": "unit", "code": "x"}]), "task.tests[0]")
    assert "unit" in str(err)


def test_question_shape_rejections():
    q = {"id": "q", "type": "choice", "instructions": "pick", "options": {"a": "A"}, "scores": {"a": 5}}
    _bad(question_task(questions=[q]), "at least two options")
    q2 = {"id": "q", "type": "choice", "instructions": "pick", "options": {"a": "A", "b": "B"},
          "scores": {"a": 9, "b": 1}}
    _bad(question_task(questions=[q2]), "outside 1..5")
    q3 = {"id": "q", "type": "choice", "instructions": "pick", "options": {"a": "A", "b": "B"},
          "scores": {"a": 5}}
    _bad(question_task(questions=[q3]), "missing a score")
    q4 = {"id": "q", "type": "choice", "instructions": "pick", "options": {"a": "A", "b": "B"},
          "scores": {"a": 5, "b": 1, "c": 2}}
    _bad(question_task(questions=[q4]), "'c' is not among the options")


def test_message_list_trajectory():
    data = open_task()
    data["trajectories"] = [[{"role": "user", "content": "hi"},
                             {"role": "assistant", "content": None,
                              "tool_calls": [{"function": {"name": "search", "arguments": "{\"q\": 1}"}}]},
                             {"role": "tool", "name": "search", "content": "result"},
                             {"role": "assistant", "content": "final answer"}]]
    item = parse_task(data)
    t = item.trajectories[0]
    assert t.id == "t0" and t.answer == "final answer"
    assert [s.type for s in t.steps] == ["message", "tool_call", "tool_result", "message"]


def test_jsonl_errors_carry_line_numbers(tmp_path):
    path = tmp_path / "tasks.jsonl"
    bad = code_task()
    bad["task"]["tests"] = [{"kind": "nope"}]
    path.write_text(json.dumps(code_task()) + "\n\n{not json\n" + json.dumps(bad) + "\n")
    rows = list(iter_task_lines(path))
    assert [r[0] for r in rows] == [1, 3, 4]
    assert isinstance(rows[0][1], TaskInput)
    assert isinstance(rows[1][1], TaskValidationError) and rows[1][1].line == 3
    assert rows[2][1].line == 4 and "tests[0]" in str(rows[2][1])
    with pytest.raises(TaskValidationError, match="line 3"):
        load_tasks(path)


def test_json_file_error_names_line(tmp_path):
    data = code_task()
    data["task"]["difficulty"] = "impossible"
    path = tmp_path / "task.json"
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    expected_line = next(i for i, l in enumerate(path.read_text().splitlines(), 1) if '"difficulty"' in l)
    assert info.value.line == expected_line
    assert f"line {expected_line}" in str(info.value)


def test_yaml_file_loads(tmp_path):
    path = tmp_path / "task.yaml"
    path.write_text("task:\n  id: y\n  prompt: Is the sky blue?\n  criteria: ['Does it say yes?']\n"
                    "trajectories:\n  - id: a\n    answer: 'yes'\n")
    [item] = load_tasks(path)
    assert item.task.criteria[0].criterion == "Does it say yes?"


def test_empty_files_are_bad_input(tmp_path):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("list.json", "[]")):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(TaskValidationError, match="holds no tasks"):
            load_tasks(path)
