"""Pure parts of ``oracle compare``: labels, baseline, selection, metrics, stability, the table."""

from __future__ import annotations

import json

import pytest

from oracle.comparison._arms import arm_kinds, llm_task, reorder
from oracle.comparison._baseline import baseline_verdict, token_f1
from oracle.comparison._labels import parse_lines
from oracle.comparison._metrics import bootstrap_interval, cohen_kappa, stability, units
from oracle.comparison._plan import limit_items, plan_units
from oracle.comparison.records import RunRecord
from oracle.comparison.summary import build_summary
from oracle.cli.render import comparison_blocks, plain_text
from oracle.config.model import OracleConfig

YES_NO = {"id": "answer", "type": "choice", "instructions": "Is it wrong?", "options": {"yes": "y", "no": "n"},
          "scores": {"yes": 5, "no": 1}}


def _item(i: int, **label):
    return {"task": {"id": f"t{i}", "prompt": "p", "questions": [YES_NO]},
            "trajectories": [{"id": "a", "answer": "x"}], "label": label or {"answers": {"answer": "yes"}}}


def _record(arm="decision_judge", item="t0", repeat=0, order="given", **fields):
    base = dict(key=f"{arm}|{item}|{repeat}|{order}", run_id="r", arm=arm, item_id=item, repeat=repeat,
                order=order, status="ok", kinds=["answers"])
    base.update(fields)
    return RunRecord(**base)


def test_token_f1_and_the_baseline_rule():
    assert token_f1("The cat sat", "the cat sat") == 1.0
    assert token_f1("a b", "c d") == 0.0
    assert token_f1("", "x") == 0.0
    assert round(token_f1("paris france", "paris"), 3) == 0.667
    items = parse_lines([json.dumps({"task": {"id": "r", "prompt": "capital?", "reference": "Paris"},
                                     "trajectories": [{"id": "a", "answer": "London"}, {"id": "b", "answer": "Paris"}],
                                     "label": {"best": ["b"], "passed": {"a": False, "b": True}}})])
    ranking, passed, f1, _ = baseline_verdict(items[0].task, items[0].trajectories)
    assert ranking == ["b", "a"] and passed == {"a": False, "b": True} and f1 == {"a": 0.0, "b": 1.0}
    # No reference: the first candidate shown is best and passes, and the first option is chosen.
    item = parse_lines([json.dumps(_item(0))])[0]
    for order, first in (("given", "yes"), ("reversed", "no")):
        shown = reorder(item, order)
        _, _, f1, answers = baseline_verdict(shown.task, shown.trajectories)
        assert f1 is None and answers == {"answer": first}


def test_reversal_reverses_candidates_and_choice_options_only():
    item = parse_lines([json.dumps({"task": {"id": "t", "prompt": "p", "questions": [
        YES_NO, {"id": "s", "type": "score", "instructions": "how good", "levels": ["bad", "ok", "good"]}]},
        "trajectories": [{"id": "a"}], "label": {"answers": {"answer": "no"}}})])[0]
    shown = reorder(item, "reversed")
    assert shown.task.questions[0].labels() == ["no", "yes"]
    assert shown.task.questions[1].labels() == ["bad", "ok", "good"]
    assert reorder(item, "given").task.questions[0].labels() == ["yes", "no"]


def test_arm_kinds_say_what_each_arm_can_judge():
    config = OracleConfig()
    yes_no = parse_lines([json.dumps(_item(0))])[0]
    assert arm_kinds("verifier", yes_no, config) == ([], "the task has no tests and no reference to check against")
    assert arm_kinds("decision_judge", yes_no, config) == (["answers"], None)
    assert arm_kinds("llm_judge", yes_no, config) == (["answers"], None)
    task, options = llm_task(yes_no.task)
    assert options == ("yes", "no") and task.questions == []
    assert task.criteria[0].criterion == "The answer to this question is 'yes': Is it wrong?"
    pair = parse_lines([json.dumps({"task": {"id": "p", "prompt": "q"},
                                    "trajectories": [{"id": "a", "answer": "1"}, {"id": "b", "answer": "2"}],
                                    "label": {"best": ["a"], "passed": {"a": True}}})])[0]
    assert arm_kinds("decision_judge", pair, config) == (["best"], None)  # a comparison ranks: no pass verdict
    assert arm_kinds("llm_judge", pair, config) == (["passed", "best"], None)
    four = parse_lines([json.dumps({"task": {"id": "f", "prompt": "q", "questions": [
        {"id": "c", "type": "choice", "instructions": "which", "options": {k: k for k in "ABCD"},
         "scores": {k: 3 for k in "ABCD"}}]}, "trajectories": [{"id": "a"}], "label": {"answers": {"c": "A"}}})])[0]
    kinds, reason = arm_kinds("llm_judge", four, config)
    assert kinds == [] and "exactly one question with two options" in reason


def test_limit_is_seeded_and_spread_over_strata():
    lines = [json.dumps(_item(i, answers={"answer": "yes"}, evaluator="decision_judge")) for i in range(10)]
    lines += [json.dumps(_item(10 + i, answers={"answer": "no"}, evaluator="llm_judge")) for i in range(10)]
    items = parse_lines(lines)
    a, b = limit_items(items, 6, seed=1), limit_items(items, 6, seed=1)
    assert [i.id for i in a] == [i.id for i in b]
    assert sum(i.label.evaluator == "llm_judge" for i in a) == 3
    assert [i.id for i in limit_items(items, 6, seed=2)] != [i.id for i in a]
    assert [i.id for i in a] == sorted((i.id for i in a), key=lambda k: int(k[1:]))  # file order kept
    units_ = plan_units(a[:2], ["routed", "baseline"], repeats=2, orders=("given", "reversed"))
    assert len(units_) == 16 and units_[-1].arm == "routed" and units_[0].arm == "baseline"


def test_kappa_and_bootstrap_interval():
    assert cohen_kappa([(True, True), (False, False)] * 5) == 1.0
    assert cohen_kappa([(True, False), (False, True)] * 5) == -1.0
    assert cohen_kappa([(True, True)] * 4) is None  # one category only: undefined, not 1
    pairs = [(1, 1)] * 30 + [(0, 1)] * 10
    low, high = bootstrap_interval(pairs, seed=0)
    assert low < 0.75 < high and (low, high) == bootstrap_interval(pairs, seed=0)
    assert bootstrap_interval([(0, 0)], seed=0) is None


def test_abstained_is_not_wrong_and_late_is_never_right():
    item = parse_lines([json.dumps(_item(0))])[0]
    assert units(_record(chosen={"answer": "yes"}), item)[0].correct
    abstained = units(_record(status="abstained"), item)[0]
    assert not abstained.decided and not abstained.correct
    late = units(_record(chosen={"answer": "yes"}, within_timeout=False), item)[0]
    assert late.decided and not late.correct
    assert units(_record(status="n/a", kinds=[]), item) == []


def test_stability_counts_repeat_changes_and_order_flips():
    recs = [_record(repeat=0, chosen={"answer": "yes"}), _record(repeat=1, chosen={"answer": "no"}),
            _record(repeat=0, order="reversed", chosen={"answer": "yes"}),
            _record(repeat=1, order="reversed", chosen={"answer": "no"}),
            _record(item="t1", repeat=0, chosen={"answer": "yes"}),
            _record(item="t1", repeat=1, chosen={"answer": "yes"}),
            _record(item="t1", repeat=0, order="reversed", chosen={"answer": "no"}),
            _record(item="t1", repeat=1, order="reversed", chosen={"answer": "no"})]
    s = stability(recs)
    assert (s["repeat_items"], s["repeat_changed"], s["order_items"], s["order_flipped"]) == (2, 1, 2, 1)


def test_summary_and_table_report_na_costs_and_routing():
    items = parse_lines([json.dumps(_item(0, answers={"answer": "yes"}, evaluator="decision_judge")),
                         json.dumps(_item(1, answers={"answer": "no"}, evaluator="decision_judge"))])
    recs = [_record(item="t0", chosen={"answer": "yes"}, cost_usd=None, calls=1, latency_ms=5.0,
                    confidence={"answer": 0.9}),
            _record(item="t1", chosen={"answer": "yes"}, cost_usd=None, calls=1, latency_ms=7.0,
                    confidence={"answer": 0.6}),
            _record(arm="verifier", item="t0", status="n/a", kinds=[], reason="no tests"),
            _record(arm="verifier", item="t1", status="n/a", kinds=[], reason="no tests"),
            _record(arm="routed", item="t0", chosen={"answer": "yes"}, evaluator="decision_judge", cost_usd=0.5),
            _record(arm="routed", item="t1", chosen={"answer": "no"}, evaluator="llm_judge", cost_usd=0.5)]
    summary = build_summary(recs, items, arms=["decision_judge", "verifier", "routed"], repeats=1, orders=["given"],
                            seed=0, timeout_s=10, config_hash="h")
    dj, ver, routed = summary.results
    assert dj.agreement == 0.5 and dj.cost_usd is None and dj.cost_per_100_items_usd is None
    assert dj.calibration and dj.latency_ms["p50"] == 6.0
    assert ver.n == 0 and ver.not_applicable == 2 and ver.not_applicable_reasons == {"no tests": 2}
    assert routed.routing_accuracy == 0.5 and routed.cost_per_100_items_usd == 50.0
    gap = summary.routing_gap
    assert gap.routed == 1.0 and gap.best_single_arm == "decision_judge" and gap.per_item_best == 0.5
    table = plain_text(comparison_blocks(summary))
    assert "n/a verifier x2: no tests" in table and "a price is unknown" in table


@pytest.mark.parametrize("arms", [["nope"], []])
def test_unknown_arms_are_bad_input(arms):
    from oracle.comparison.api import check_settings
    from oracle.errors import TaskValidationError

    with pytest.raises(TaskValidationError, match="--arms"):
        check_settings(arms, 1, None, 10, 1)


def test_suite_conversion_drops_reserved_records_and_round_trips(shared_data, tmp_path):
    from oracle.comparison._importers import import_suite
    from oracle.comparison._labels import dump_item
    from oracle.comparison._reserved import Reserved, suite_pool_key

    suite = shared_data("suite/dev_suite.jsonl")
    data = suite.parent.parent
    items, dropped = import_suite(suite, data)
    assert dropped == 0 and len(items) == 308  # the dev suite was built without reserved records
    again = parse_lines([json.dumps(dump_item(i)) for i in items])
    assert [i.model_dump() for i in again] == [i.model_dump() for i in items]
    # A file that holds reserved records: each one is dropped, by key, by HumanEval task or by prompt.
    reserved = Reserved.load(data)
    records = [json.loads(line) for line in suite.read_text().splitlines()[:3]]
    halueval = next(json.loads(line) for line in suite.read_text().splitlines() if "halueval-general/" in line)
    key = sorted(k for k in reserved.keys if k.startswith("halueval-general:"))[0]
    records.append({**halueval, "id": f"decision/halueval-general/{key.split(':')[1]}"})
    records.append({**records[0], "id": f"code-verify/humaneval-codegen16b/{sorted(reserved.humaneval_tasks)[0]}"})
    assert suite_pool_key(records[-2]["id"]) == (key, None)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in records))
    kept, dropped = import_suite(mixed, data)
    assert dropped == 2 and [i.id for i in kept] == [r["id"] for r in records[:3]]
