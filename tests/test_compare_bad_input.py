"""``oracle compare`` on bad labels: exit 2, the line and the field named, and nothing run.

"Nothing run" is checked on the wire: the judges point at a scripted server (a real HTTP server
on a loopback port) that must receive no request, and no ``runs.jsonl`` may exist afterwards.
The verifier would run code for the first (valid) item if anything ran before the bad line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.cli.main import main

GOOD = {"task": {"id": "add", "prompt": "def add(a, b):", "entry_point": "add",
                 "tests": [{"kind": "assert", "code": "assert add(1, 2) == 3"}]},
        "trajectories": [{"id": "a", "code": "def add(a, b):\n    return a + b"},
                         {"id": "b", "code": "def add(a, b):\n    return a - b"}],
        "label": {"passed": {"a": True, "b": False}, "best": ["a"], "evaluator": "verifier"}}
YES_NO = {"task": {"id": "yn", "prompt": "Is the sky green?", "questions": [
    {"id": "q", "type": "choice", "instructions": "Is the answer right?", "options": {"yes": "y", "no": "n"},
     "scores": {"yes": 5, "no": 1}}]}, "trajectories": [{"id": "r", "answer": "no"}],
    "label": {"answers": {"q": "yes"}}}


def _bad(label: dict, base: dict = GOOD) -> dict:
    return {**base, "task": {**base["task"], "id": "bad"}, "label": label}


CASES = [
    ("unknown label key", _bad({"passed": {"a": True}, "bestt": ["a"]}), "label.bestt", "unknown key"),
    ("passed names no trajectory", _bad({"passed": {"zz": True}}), "label.passed.zz", "no trajectory"),
    ("best names no trajectory", _bad({"best": ["a", "nope"]}), "label.best[1]", "names no trajectory"),
    ("answers names no question", _bad({"answers": {"nope": "yes"}}, YES_NO), "label.answers.nope", "no question"),
    ("answers option not offered", _bad({"answers": {"q": "maybe"}}, YES_NO), "label.answers.q", "not an option"),
    ("answers on several candidates", _bad({"answers": {"q": "yes"}}, {**YES_NO, "trajectories": [
        {"id": "r"}, {"id": "s"}]}), "label.answers", "one-candidate"),
    ("empty label", _bad({}), "label", "names none of"),
    ("label missing", {k: v for k, v in _bad({}).items() if k != "label"}, "label", "missing"),
    ("unknown top-level key", {**GOOD, "lable": {}}, "lable", "unknown key"),
    ("bad evaluator", _bad({"evaluator": "oracle"}), "label.evaluator", "Input should be"),
]


@pytest.fixture()
def judge_config(tmp_path, scripted_server) -> Path:
    """A config whose judge and decision endpoints are the scripted server."""
    path = tmp_path / "config.json.yaml"
    url = scripted_server.base_url
    path.write_text(json.dumps({"providers": {
        "judge": {"kind": "openai", "base_url": url, "model": "scripted-model"},
        "decision": {"kind": "decisions", "base_url": url, "model": "scripted-model"}}}))
    return path


@pytest.mark.parametrize("name,bad,field,words", CASES, ids=[c[0] for c in CASES])
def test_bad_label_exits_2_naming_line_and_field_before_anything_runs(name, bad, field, words, tmp_path,
                                                                     judge_config, scripted_server, capsys):
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(bad) + "\n")
    out = tmp_path / "out"
    code = main(["--config", str(judge_config), "compare", str(labelled), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{labelled}:line 3: {field}" in err and words in err, err
    assert scripted_server.requests == []
    assert not (out / "runs.jsonl").exists()


def test_bad_options_exit_2_before_anything_runs(tmp_path, judge_config, scripted_server, capsys):
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(json.dumps(GOOD) + "\n")
    for args, field in ((["--arms", "verifier,oracle"], "--arms"), (["--repeats", "0"], "--repeats"),
                        (["--limit", "0"], "--limit"), (["--select", "nothing*"], "--select")):
        code = main(["--config", str(judge_config), "compare", str(labelled), "-o", str(tmp_path / "o"), *args])
        assert code == 2 and field in capsys.readouterr().err
    assert scripted_server.requests == []
    assert not (tmp_path / "o" / "runs.jsonl").exists()


def test_an_output_dir_of_another_comparison_is_refused(tmp_path, capsys):
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(json.dumps(GOOD) + "\n")
    out = tmp_path / "out"
    assert main(["compare", str(labelled), "--arms", "baseline", "-o", str(out), "--no-report"]) == 0
    assert main(["compare", str(labelled), "--arms", "baseline", "--repeats", "2", "-o", str(out)]) == 2
    assert "holds the runs of another comparison (differs in repeats)" in capsys.readouterr().err
