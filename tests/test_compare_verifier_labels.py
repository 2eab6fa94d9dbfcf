"""``oracle compare --labels verifier``: the tests label the candidates, the judges are scored against them.

Crafted records first (what is excluded and why, agreement with execution vs with gold), then the
HumanEval importer (the reserved tasks never appear), then the whole command on real HumanEval
items: the verifier runs in the real sandbox, the LLM judge on the scripted chat server.
"""

from __future__ import annotations

import json
import re

import pytest

from oracle.cli.main import main
from oracle.comparison._labels import parse_item
from oracle.comparison.records import RunRecord
from oracle.comparison.summary import build_summary
from tests.plugins.scripted_server import chat_reply
from tests.test_llm_judge import pointwise_json, user_text


def item(iid: str, gold: dict[str, bool]):
    return parse_item({"task": {"id": iid, "prompt": "def f(): ...", "entry_point": "f",
                                "tests": [{"kind": "assert", "code": "assert f() == 1"}]},
                       "trajectories": [{"id": c, "code": "def f(): return 1"} for c in gold],
                       "label": {"passed": gold}})


def record(arm: str, iid: str, passed: dict[str, bool | None], status: str = "ok", **extra) -> RunRecord:
    return RunRecord(key=f"{arm}|{iid}|0|given", run_id="t", arm=arm, item_id=iid, repeat=0, order="given",
                     status=status, kinds=["passed"], evaluator=arm, passed=passed,
                     options_shown={"candidates": list(passed)}, **extra)


ITEMS = [item("ok", {"a": True, "b": True}), item("broken", {"a": True, "b": False}),
         item("crashed", {"a": False, "b": False}), item("no-tests", {"a": True, "b": False})]
RECORDS = [
    record("verifier", "ok", {"a": True, "b": False}),  # the tests disagree with gold on b
    record("verifier", "broken", {"a": None, "b": None}),  # broken tests: no verdict for anyone
    record("verifier", "crashed", {}, status="failed", error={"type": "SandboxError", "message": "x"}),
    record("verifier", "no-tests", {}, status="n/a", reason="the task has no tests and no reference"),
    *(record("llm_judge", i.id, {"a": True, "b": True}) for i in ITEMS),
]


def test_the_verifier_labels_the_judges_and_is_left_out_of_the_ranking():
    s = build_summary(RECORDS, ITEMS, arms=["verifier", "llm_judge"], repeats=1, orders=["given"], seed=0,
                      timeout_s=None, config_hash="h", label_source="verifier")
    assert s.label_source == "verifier" and "execution" in s.labels.description
    assert [a.arm for a in s.results] == ["llm_judge"] and s.label_arm.arm == "verifier"
    assert s.labels.items_labelled == 1 and s.labels.items_excluded == 3
    assert s.labels.excluded_reasons == {
        "the verifier gave no pass verdict for any candidate (broken tests, or the item's labels name no passed "
        "candidates)": 1, "verifier failed: SandboxError": 1,
        "verifier n/a: the task has no tests and no reference": 1}
    assert (s.labels.candidates_labelled, s.labels.candidates_passed) == (2, 1)
    assert s.labels.gold_units == 2 and s.labels.gold_agreement == 0.5  # the tests vs gold on item "ok"
    judge = s.results[0]
    assert judge.n == 1 and judge.units == 2
    assert judge.agreement == 0.5  # passes a (tests: pass) and b (tests: fail)
    assert judge.gold is not None and judge.gold.agreement == 1.0 and judge.gold.units == 2  # gold: both pass
    assert s.label_arm.agreement is not None  # the verifier's own agreement, here with gold


def test_gold_is_the_default_and_ranks_the_verifier():
    s = build_summary(RECORDS, ITEMS, arms=["verifier", "llm_judge"], repeats=1, orders=["given"], seed=0,
                      timeout_s=None, config_hash="h")
    assert s.label_source == "gold" and s.labels is None and s.label_arm is None
    assert [a.arm for a in s.results] == ["verifier", "llm_judge"] and s.results[1].gold is None


def test_an_unknown_label_source_is_refused():
    with pytest.raises(ValueError, match="label_source"):
        build_summary(RECORDS, ITEMS, arms=["llm_judge"], repeats=1, orders=["given"], seed=0, timeout_s=None,
                      config_hash="h", label_source="humans")


def test_humaneval_import_holds_the_80_tasks_not_reserved(shared_data):
    from oracle.comparison._humaneval import SAMPLE_MODEL, import_humaneval

    data = shared_data("suite/reserved_keys.json").parent.parent
    reserved = set(json.loads((data / "suite/reserved_keys.json").read_text())["humaneval_task_ids"])
    items, dropped = import_humaneval(data, per_task=3, seed=0)
    assert len(items) == 80 and dropped == len(reserved) == 84
    assert not {i.id for i in items} & reserved
    assert all(2 <= len(i.trajectories) <= 3 for i in items)
    assert all(t.metadata["model"] == SAMPLE_MODEL for i in items for t in i.trajectories)
    assert sum(bool(i.label.best) for i in items) >= 30  # a passing sample wherever the task has one
    again, _ = import_humaneval(data, per_task=3, seed=0)
    assert [i.model_dump() for i in again] == [i.model_dump() for i in items]


@pytest.mark.sandbox
@pytest.mark.slow
def test_compare_labels_verifier_on_humaneval_from_the_cli(shared_data, scripted_server, tmp_path, capsys):
    """A judge that passes every candidate agrees with the tests exactly on the candidates that pass."""
    data = shared_data("suite/reserved_keys.json").parent.parent

    def answer(req):
        ids = re.findall(r'"(\w+)": \{"rationale"', user_text(req)) or ["c1"]
        return chat_reply(pointwise_json({i: 9 for i in ids}))

    scripted_server.set_handler(answer)
    cfg = tmp_path / "cfg.yaml"  # JSON is YAML
    cfg.write_text(json.dumps({"providers": {"judge": scripted_server.provider_settings().model_dump(mode="json")},
                               "llm_judge": {"mode": "pointwise", "logprobs": False}}))
    out = tmp_path / "out"
    code = main(["compare", "--config", str(cfg), "--import", "humaneval", "--data", str(data), "--candidates", "2",
                 "--select", "HumanEval/7", "--select", "HumanEval/23",
                 "--select", "HumanEval/45", "--labels", "verifier", "--arms", "llm_judge", "-o", str(out),
                 "--summary-json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["label_source"] == "verifier" and summary["arms"] == ["verifier", "llm_judge"]
    assert [a["arm"] for a in summary["results"]] == ["llm_judge"] and summary["label_arm"]["arm"] == "verifier"
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    verdicts = {(r["item_id"], c): v for r in records if r["arm"] == "verifier" for c, v in r["passed"].items()}
    assert len(verdicts) == 6 and all(v is not None for v in verdicts.values())
    judge = summary["results"][0]
    assert judge["failed"] == 0 and judge["by_kind"]["passed"]["units"] == 6
    assert judge["by_kind"]["passed"]["agreement"] == pytest.approx(sum(verdicts.values()) / 6, abs=1e-6)
    assert summary["labels"]["items_labelled"] == 3 and summary["labels"]["candidates_labelled"] == 6
    assert summary["labels"]["gold_agreement"] == 1.0  # the sandbox reproduces the data set's execution labels
    assert judge["gold"]["units"] == 6 + 3  # 6 pass labels and one best label per item (each has a passing sample)
    page = (out / "report.html").read_text()
    assert "Labels come from execution" in page and "label_source: verifier" in page


def test_the_terminal_table_says_the_labels_come_from_execution(capsys):
    from oracle.cli.render import comparison_blocks, show

    s = build_summary(RECORDS, ITEMS, arms=["verifier", "llm_judge"], repeats=1, orders=["given"], seed=0,
                      timeout_s=None, config_hash="h", label_source="verifier")
    show(comparison_blocks(s))
    out = capsys.readouterr().out
    assert "labels from execution (label_source: verifier): 1 items labelled, 3 excluded" in out
    assert "\nverifier " not in out  # not ranked
