"""The bias report of ``oracle compare``: order flips, first-position wins, length bias, self-preference.

Crafted records whose expected figures are known (a judge that always picks seat A; one that always
picks the first option; scores that follow length), then a real comparison on HumanEval items with
the LLM judge on the scripted chat server (real HTTP) answering "A" to every pairwise prompt.
"""

from __future__ import annotations

import json
import re

import pytest

from oracle.comparison._labels import parse_item
from oracle.comparison.records import RunRecord
from oracle.comparison.summary import build_summary
from tests.plugins.scripted_server import chat_reply
from tests.test_llm_judge import pointwise_json, user_text


def item(iid: str, answers: dict[str, str], passed: dict[str, bool], models: dict[str, str] | None = None):
    trajs = [{"id": c, "answer": a, **({"metadata": {"model": models[c]}} if models and c in models else {})}
             for c, a in answers.items()]
    return parse_item({"task": {"id": iid, "prompt": "Write it."}, "trajectories": trajs,
                       "label": {"passed": passed}})


def record(arm: str, iid: str, order: str, shown: list[str], *, top: str | None = None, repeat: int = 0,
           scores: dict[str, float] | None = None, pairs: list | None = None, joint: bool = False,
           model: str = "judge-model", status: str = "ok") -> RunRecord:
    return RunRecord(key=f"{arm}|{iid}|{repeat}|{order}", run_id="t", arm=arm, item_id=iid, repeat=repeat,
                     order=order, status=status, kinds=["passed"], evaluator=arm, options_shown={"candidates": shown},
                     top=top, ranking=[top] if top else [], scores=scores or {}, pairs=pairs or [],
                     distribution={"candidates": {c: 0.5 for c in shown}} if joint else {}, model_requested=model)


def summarize(records, items, arms=("llm_judge",), orders=("given", "reversed")):
    return {a.arm: a for a in build_summary(records, items, arms=list(arms), repeats=1, orders=list(orders), seed=3,
                                            timeout_s=None, config_hash="h").results}


ITEMS = [item(f"t{k}", {"a": "x" * (k + 1), "b": "y" * (10 - k)}, {"a": True, "b": False}) for k in range(4)]


def seat_a_pairs(a: str = "a", b: str = "b") -> list[dict]:
    """Both orders of one pair, the first seat winning each time."""
    return [{"a": a, "b": b, "seats": ["A", "A"]}]


def test_a_judge_that_always_picks_seat_a_has_first_position_1_and_flips_every_pair():
    recs = [record("llm_judge", i.id, order, shown, top=shown[0], pairs=seat_a_pairs())
            for i in ITEMS for order, shown in (("given", ["a", "b"]), ("reversed", ["b", "a"]))]
    bias = summarize(recs, ITEMS)["llm_judge"].bias
    first, flips = bias.first_position_rate, bias.order_flip_rate
    assert first.by_source["judge_pairs"] == {"value": 1.0, "n": 16, "count": 16}  # 8 runs x 2 orders read
    assert flips.by_source["judge_pairs"] == {"value": 1.0, "n": 8, "count": 8}
    assert flips.by_source["compare_orders"] == {"value": 1.0, "n": 4, "count": 4}  # top follows the seat
    assert first.value == 1.0 and first.chance == 0.5 and flips.value == 1.0 and flips.n == 12
    assert "both orders" in flips.source and "shown first" in first.source


def test_a_position_fair_judge_flips_nothing_and_wins_first_half_the_time():
    recs = [record("llm_judge", i.id, order, shown, top="a", pairs=[{"a": "a", "b": "b", "seats": ["A", "B"]}])
            for i in ITEMS for order, shown in (("given", ["a", "b"]), ("reversed", ["b", "a"]))]
    bias = summarize(recs, ITEMS)["llm_judge"].bias
    assert bias.order_flip_rate.value == 0.0 and bias.order_flip_rate.count == 0
    assert bias.first_position_rate.value == 0.5 and bias.first_position_rate.n == 16


def test_a_joint_choice_that_always_takes_the_first_option():
    recs = [record("decision_judge", i.id, order, shown, top=shown[0], joint=True)
            for i in ITEMS for order, shown in (("given", ["a", "b"]), ("reversed", ["b", "a"]))]
    bias = summarize(recs, ITEMS, arms=("decision_judge",))["decision_judge"].bias
    assert bias.first_position_rate.by_source["joint_choice"] == {"value": 1.0, "n": 8, "count": 8}
    assert bias.first_position_rate.by_source["judge_pairs"]["value"] is None  # no pairs: None, not 0
    assert bias.order_flip_rate.value == 1.0 and bias.order_flip_rate.n == 4


def test_no_evidence_gives_none_never_zero():
    recs = [record("llm_judge", i.id, "given", ["a", "b"], top="a") for i in ITEMS]
    bias = summarize(recs, ITEMS, orders=("given",))["llm_judge"].bias
    for rate in (bias.order_flip_rate, bias.first_position_rate):
        assert rate.value is None and rate.n == 0
    assert bias.length_bias.value is None and bias.length_bias.ci95 is None and bias.length_bias.n == 0
    assert bias.self_preference is None  # no candidate carries metadata.model


def test_failed_and_na_runs_are_not_evidence():
    recs = [record("llm_judge", i.id, "given", ["a", "b"], top="a", pairs=seat_a_pairs(), status="failed")
            for i in ITEMS]
    assert summarize(recs, ITEMS, orders=("given",))["llm_judge"].bias.first_position_rate.n == 0


def _length_items(n: int):
    return [item(f"L{k}", {"p": "p" * (5 + k), "f": "f" * (40 - k)}, {"p": True, "f": False}) for k in range(n)]


def test_length_bias_is_a_rank_correlation_within_label_with_a_seeded_interval():
    items = _length_items(6)
    # score rises with length within each label (and passing ones score higher: no length effect across labels)
    recs = [record("llm_judge", i.id, "given", ["p", "f"], top="p",
                   scores={"p": 0.5 + len(i.trajectories[0].answer) / 100, "f": len(i.trajectories[1].answer) / 100})
            for i in items]
    lb = summarize(recs, items, orders=("given",))["llm_judge"].bias.length_bias
    assert lb.value == 1.0 and lb.ci95 == (1.0, 1.0) and lb.n == 12 and lb.items == 6
    assert lb.strata == {"failed": 6, "passed": 6}
    flipped = [r.model_copy(update={"scores": {"p": 1 - r.scores["p"], "f": 1 - r.scores["f"]}}) for r in recs]
    assert summarize(flipped, items, orders=("given",))["llm_judge"].bias.length_bias.value == -1.0


def test_length_bias_interval_is_reproducible_and_brackets_the_value():
    items = _length_items(8)
    noise = [0.3, 0.9, 0.1, 0.7, 0.4, 0.2, 0.8, 0.6]
    recs = [record("llm_judge", i.id, "given", ["p", "f"], top="p", scores={"p": noise[k], "f": noise[-k - 1]})
            for k, i in enumerate(items)]
    one = summarize(recs, items, orders=("given",))["llm_judge"].bias.length_bias
    two = summarize(recs, items, orders=("given",))["llm_judge"].bias.length_bias
    assert one == two and one.ci95 is not None and one.ci95[0] <= one.value <= one.ci95[1]


def test_self_preference_counts_the_judges_own_model():
    models = {"a": "judge-model", "b": "other-model"}
    items = [item(f"s{k}", {"a": "aa", "b": "bb"}, {"a": True, "b": False}, models) for k in range(5)]
    always_own = [record("llm_judge", i.id, "given", ["a", "b"], top="a") for i in items]
    pref = summarize(always_own, items, orders=("given",))["llm_judge"].bias.self_preference
    assert pref.value == 1.0 and pref.n == 5 and pref.chance == 0.5
    never_own = [r.model_copy(update={"top": "b"}) for r in always_own]
    assert summarize(never_own, items, orders=("given",))["llm_judge"].bias.self_preference.value == 0.0
    other_judge = [r.model_copy(update={"model_requested": "third"}) for r in always_own]
    pref = summarize(other_judge, items, orders=("given",))["llm_judge"].bias.self_preference
    assert pref is not None and pref.value is None and pref.n == 0  # models carried, none the judge's


def test_routed_reports_bias_over_its_runs_routed_to_a_judge_and_the_verifier_none():
    recs = [record("routed", i.id, "given", ["a", "b"], top="a", pairs=seat_a_pairs()) for i in ITEMS[:2]]
    recs[0] = recs[0].model_copy(update={"evaluator": "llm_judge"})
    recs[1] = recs[1].model_copy(update={"evaluator": "verifier"})
    recs += [record("verifier", i.id, "given", ["a", "b"], top="a") for i in ITEMS]
    arms = summarize(recs, ITEMS, arms=("verifier", "routed"), orders=("given",))
    assert arms["verifier"].bias is None
    assert arms["routed"].bias.first_position_rate.n == 2  # only the run routed to the LLM judge


def test_records_written_before_the_pairs_field_still_load():
    old = record("llm_judge", "t0", "given", ["a", "b"], top="a").model_dump(mode="json")
    del old["pairs"]
    assert RunRecord.model_validate(old).pairs == []


@pytest.mark.sandbox
@pytest.mark.slow
def test_compare_on_humaneval_with_a_seat_a_judge(shared_data, scripted_server, tmp_path):
    """Real HumanEval items, the LLM judge in pairwise mode always answering "A": every pair flips,
    the first seat wins every read verdict, and the report shows the bias plot and table offline."""
    from oracle.comparison._humaneval import import_humaneval
    from oracle.comparison.api import compare
    from oracle.config.model import OracleConfig

    data = shared_data("suite/reserved_keys.json").parent.parent
    items, _ = import_humaneval(data, per_task=3, seed=0)

    def answer(req):
        text = user_text(req)
        if 'id="B"' in text:
            return chat_reply(json.dumps({"rationale": "A reads better", "winner": "A"}))
        return chat_reply(pointwise_json({i: 5 for i in re.findall(r'"(\w+)": \{"rationale"', text)} or {"c1": 5}))

    scripted_server.set_handler(answer)
    config = OracleConfig.model_validate({"providers": {"judge": scripted_server.provider_settings().model_dump()},
                                          "llm_judge": {"mode": "pairwise", "logprobs": False}})
    result = compare(items[:2], tmp_path / "out", arms=["llm_judge"], both_orders=True, config=config)
    arm = result.summary.results[0]
    assert arm.failed == 0 and arm.unparsed == 0
    pairs = [p for r in result.records for p in r.pairs]
    assert len(pairs) == 2 * 2 * 3  # 2 items x 2 orders x 3 pairs of 3 candidates
    assert arm.bias.first_position_rate.by_source["judge_pairs"] == {"value": 1.0, "n": 24, "count": 24}
    assert arm.bias.order_flip_rate.by_source["judge_pairs"] == {"value": 1.0, "n": 12, "count": 12}
    assert arm.bias.self_preference is not None and arm.bias.self_preference.n == 0  # CodeGen samples, not ours
    saved = json.loads(result.summary_path.read_text())["results"][0]["bias"]
    assert saved["first_position_rate"]["value"] == 1.0 and saved["length_bias"]["n"] == arm.bias.length_bias.n
    page = result.report_path.read_text()
    assert 'id="plot-bias"' in page and 'id="bias"' in page and "<svg" in page
    assert not re.search(r"""(?:src|href)=["']?https?:""", page)
