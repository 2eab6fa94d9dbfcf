"""Bad input is rejected before anything runs, with the field (and file line) named."""

from __future__ import annotations

import json

import pytest

from oracle.errors import TaskValidationError
from oracle.tasks.task import TaskInput
from oracle.tasks.files import iter_task_lines, load_tasks, parse_task
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
    expected_line = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if '"difficulty"' in line)
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


# --- duplicate keys: refused, never silently collapsed by the JSON or YAML parser --------------------

DUPLICATE_OPTION_JSON = """{
  "task": {
    "id": "t",
    "prompt": "Which team?",
    "questions": [
      {"id": "team", "type": "choice", "instructions": "Which team should handle it?",
       "options": {"billing": "payments",
                   "technical": "bugs",
                   "billing": "refunds"},
       "scores": {"billing": 5, "technical": 1}}
    ]
  },
  "trajectories": [{"id": "r1", "answer": "Billing will refund you."}]
}
"""


def test_a_duplicate_option_label_in_a_json_file_is_named_with_its_line(tmp_path):
    path = tmp_path / "task.json"
    path.write_text(DUPLICATE_OPTION_JSON)
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    err = info.value
    assert err.field == "task.questions[0].options" and err.line == 9  # the second "billing"
    assert "duplicate key 'billing'" in str(err) and f"{path}:line 9" in str(err)


def test_duplicate_keys_anywhere_in_json_yaml_and_jsonl(tmp_path):
    meta = tmp_path / "meta.json"  # deep inside free-form metadata too: a key given twice is ambiguous
    meta.write_text('{"task": {"id": "t", "prompt": "p", "metadata": {"a": {"x": 1, "x": 2}}},'
                    ' "trajectories": [{"id": "c"}]}')
    with pytest.raises(TaskValidationError, match=r"task.metadata.a: duplicate key 'x'"):
        load_tasks(meta)
    yml = tmp_path / "task.yaml"
    yml.write_text("task:\n  id: t\n  prompt: p\n  reference: '4'\n  reference: '5'\n"
                   "trajectories:\n  - id: c\n")
    with pytest.raises(TaskValidationError) as info:
        load_tasks(yml)
    assert (info.value.field, info.value.line) == ("task", 5) and "duplicate key 'reference'" in str(info.value)
    lines = tmp_path / "tasks.jsonl"
    lines.write_text(json.dumps(code_task()) + "\n"
                     + '{"task": {"id": "t", "prompt": "p"}, "trajectories": [{"id": "c", "id": "d"}]}\n')
    rows = list(iter_task_lines(lines))
    assert isinstance(rows[0][1], TaskInput)  # one bad line never fails the file
    bad = rows[1][1]
    assert isinstance(bad, TaskValidationError) and bad.line == 2 and bad.field == "trajectories[0]"
    assert "duplicate key 'id'" in str(bad)


def test_yaml_merge_keys_may_override_and_the_same_key_twice_may_not(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("defaults: &d {id: t, prompt: p}\n"
                    "task:\n  <<: *d\n  prompt: overridden\n"
                    "trajectories: [{id: c}]\n")
    with pytest.raises(TaskValidationError, match="unknown key"):  # 'defaults' is not a task field...
        load_tasks(path)
    from oracle._internal.safe_yaml import DuplicateKeyError, load_yaml
    assert load_yaml(path.read_text(), max_aliases=10)["task"]["prompt"] == "overridden"  # ...but merging is fine
    with pytest.raises(DuplicateKeyError) as info:
        load_yaml("a: {b: 1, c: 2, b: 3}\n", max_aliases=10)
    assert (info.value.key, info.value.path, info.value.line) == ("b", "a", 1)


def test_the_cli_exits_2_naming_the_duplicate_key_and_where(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "task.json"
    path.write_text(DUPLICATE_OPTION_JSON)
    out = subprocess.run([sys.executable, "-m", "oracle", "route", str(path), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert "line 9" in out.stderr and "task.questions[0].options" in out.stderr and "'billing'" in out.stderr


def test_a_config_file_with_a_duplicate_key_is_a_config_error(tmp_path):
    from oracle.config.model import OracleConfig
    from oracle.errors import ConfigError

    path = tmp_path / "oracle.yaml"
    path.write_text("decision_judge:\n  pass_threshold: 0.5\n  pass_threshold: 0.9\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'pass_threshold'.*line 3"):
        OracleConfig.load(path, env=False)


# --- questions as the decision wire formats define them -------------------------------------------

def test_noul_and_predicate_name_the_yes_no_type():
    for name in ("noul", "predicate", "likelihood"):
        item = parse_task(question_task(questions=[{"id": "q", "type": name, "instructions": "Refund offered?"}]))
        assert item.task.questions[0].type == "likelihood"
    _bad(question_task(questions=[{"id": "q", "type": "boolean", "instructions": "x"}]), "task.questions[0].type")


def test_option_labels_must_be_distinct_as_text():
    composed, decomposed = "Caf\u00e9", "Cafe\u0301"  # the same word, two Unicode forms
    q = {"id": "q", "type": "choice", "instructions": "Where?", "options": {composed: "", decomposed: ""},
         "scores": {composed: 5, decomposed: 1}}
    err = _bad(question_task(questions=[q]), "task.questions[0].options")
    assert "two Unicode forms" in str(err)
    _bad(question_task(questions=[{"id": "q", "type": "score", "instructions": "How?",
                                   "levels": ["low", "high", "low"]}]), "'low' and 'low' are the same label twice")


def test_documented_limits_name_the_field():
    many = {f"o{i}": "" for i in range(256)}
    err = _bad(question_task(questions=[{"id": "q", "type": "choice", "instructions": "?", "options": many,
                                         "scores": {k: 3 for k in many}}]), "task.questions[0].options")
    assert "at most 255 options, got 256" in str(err)
    parse_task(question_task(questions=[{"id": "q", "type": "choice", "instructions": "?",
                                         "options": dict(list(many.items())[:255]),
                                         "scores": {k: 3 for k in list(many)[:255]}}]))
    _bad(question_task(questions=[{"id": "q", "type": "score", "instructions": "?",
                                   "levels": [str(i) for i in range(11)]}]), "at most 10 levels, got 11")
    _bad(question_task(questions=[{"id": "q", "type": "score", "instructions": "?", "levels": ["one"]}]),
         "task.questions[0].levels")
    _bad(question_task(questions=[{"id": "q", "type": "noul", "instructions": "?", "model": ""}]),
         "task.questions[0].model")


def test_abstain_option_on_a_score_question():
    q = {"id": "q", "type": "score", "instructions": "How urgent?", "levels": ["low", "mid", "high", "can't tell"],
         "abstain_option": "can't tell"}
    [question] = parse_task(question_task(questions=[q])).task.questions
    assert question.score_map() == {"low": 1.0, "mid": 3.0, "high": 5.0}  # spread without the abstain level
    _bad(question_task(questions=[{**q, "abstain_option": "unsure"}]), "is not among the levels")
    _bad(question_task(questions=[{**q, "levels": ["low", "can't tell"]}]), "two levels besides its abstain option")
    _bad(question_task(questions=[{**q, "scores": {"low": 1, "mid": 3, "high": 5, "can't tell": 3}}]),
         "the abstain option must not have a score")


def test_a_choice_question_needs_scores_unless_it_compares_the_candidates():
    unscored = {"id": "q", "type": "choice", "instructions": "Which team?", "options": {"billing": "", "tech": ""}}
    _bad(question_task(questions=[unscored]), "task.questions[0].scores: a choice question must map")
    data = open_task(questions=[{"id": "best", "type": "choice", "instructions": "Which email is best?",
                                 "options": {"b": "", "a": ""}}])
    assert parse_task(data).task.questions[0].scores is None  # options = the trajectory ids: a comparison
    data["task"]["questions"][0]["scores"] = {"a": 5, "b": 1}
    _bad(data, "task.questions[0].scores: a comparison question")


def test_claim_check_needs_text_evidence_and_one_candidate():
    _bad(open_task(claim_check=True), "task.claim_check: a claim check needs the evidence as text")
    _bad(open_task(claim_check=True, context="The store opened in 2019."), "a claim check judges one claim; got 2")
    data = open_task(claim_check=True, reference="2019")
    data["trajectories"] = data["trajectories"][:1]
    assert parse_task(data).task.claim_check is True


def test_task_fields_at_the_top_level_say_where_they_belong(tmp_path):
    """The commonest first mistake: the task's fields written beside `trajectories`, not under `task`."""
    path = tmp_path / "t.yaml"
    path.write_text("id: add\nprompt: Add.\nentry_point: add\ntrajectories:\n  - {id: a, answer: x}\n")
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    message = str(info.value)
    assert info.value.field == "task"
    assert "id, prompt, entry_point are task fields" in message and "under `task:`" in message
    assert "unknown key" not in message  # one clear reason, not four unknown keys
