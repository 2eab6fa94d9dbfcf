"""Pure parts of the decision judge: request building, readout parsing, scoring rules."""

from __future__ import annotations

import math
import re

import pytest

from oracle.errors import TaskValidationError
from oracle.providers.types import ChatReply, DecisionAnswer, Provenance, TokenLogprob
from oracle.tasks.questions import Question, QuestionInputs
from oracle.tasks.task import Criterion, Task, Trajectory
from oracle.strategies.decision_judge.readout import (UnreadableAnswer, parse_logprob_reply, parse_samples,
                                         readout_labels, readout_request)
from oracle.strategies.decision_judge.requests import (criterion_questions, group_by_inputs, to_decision_question,
                                          visible_state)
from oracle.strategies.decision_judge.scoring import (criteria_verdict, merge_orders, normalize_score,
                                         question_mode_score, read_answer)
from oracle.strategies.decision_judge.validation import validate_for_decision

PROV = Provenance(endpoint_kind="openai_chat", base_url="http://x", model_requested="m")
POLITE = Question(id="polite", type="score", instructions="How polite is it?",
                  levels=["rude", "neutral", "polite"], min_confidence=0.6)
TEAM = Question(id="team", type="choice", instructions="Which team?",
                options={"billing": "money", "technical": "bugs", "unclear": "cannot tell"},
                scores={"billing": 5, "technical": 1}, abstain_option="unclear")


def _reply(top: dict[str, float], token: str = "Yes") -> ChatReply:
    logprobs = [TokenLogprob(token=token, logprob=top.get(token, -5.0), top=top)]
    return ChatReply(text=token, logprobs=logprobs, provenance=PROV)


def _answer(qid: str, probs: dict[str, float], **kw) -> DecisionAnswer:
    return DecisionAnswer(question_id=qid, probabilities=probs, **kw)


# --- requests ----------------------------------------------------------------------------------

def test_visible_state_holds_only_the_named_fields():
    task = Task(id="t", prompt="P", reference="R", description="D")
    cand = Trajectory(id="c", answer="A", code="print(1)", output="out")
    assert visible_state(task, cand, QuestionInputs()) == {"prompt": "P", "response": "A"}
    inputs = QuestionInputs(task=["description"], candidate=["code", "output"], expected=True)
    assert visible_state(task, cand, inputs) == {"description": "D", "response_code": "print(1)",
                                                 "response_output": "out", "expected_output": "R"}
    # absent fields are left out, not sent as null
    assert visible_state(Task(id="t", prompt="P"), Trajectory(id="c"),
                         QuestionInputs(candidate=["answer", "code"])) == {"prompt": "P", "response": ""}


def test_questions_with_the_same_inputs_share_a_group():
    q1 = Question(id="a", type="likelihood", instructions="x")
    q2 = Question(id="b", type="likelihood", instructions="y", inputs=QuestionInputs(expected=True))
    q3 = Question(id="c", type="likelihood", instructions="z")
    assert [[q.id for q in g] for g in group_by_inputs([q1, q2, q3])] == [["a", "c"], ["b"]]


def test_criteria_become_likelihood_questions():
    qs = criterion_questions([Criterion(criterion="is short"), Criterion(criterion="is kind", weight=2)])
    assert [(q.id, q.type, q.instructions) for q in qs] == [
        ("criterion_0", "likelihood", "The response satisfies: is short"),
        ("criterion_1", "likelihood", "The response satisfies: is kind")]


# --- readout ------------------------------------------------------------------------------------

def test_readout_request_is_one_token_with_top_logprobs():
    req, labels = readout_request({"prompt": "p"}, to_decision_question(TEAM), top_logprobs=20)
    assert (req.max_tokens, req.logprobs, req.top_logprobs) == (1, True, 20)
    assert labels.tokens == ("A", "B", "C") and labels.options == ("billing", "technical", "unclear")
    assert re.search(r'A\) billing: <option id="A" boundary="\w+">\nmoney\n</option', req.messages[-1].content)
    assert readout_labels(to_decision_question(Question(id="q", type="likelihood", instructions="x"))
                          ).tokens == ("Yes", "No")


def test_logprob_readout_renormalizes_over_labels_and_keeps_covered_mass():
    labels = readout_labels(to_decision_question(Question(id="q", type="likelihood", instructions="x")))
    top = {"Yes": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.3), "Maybe": math.log(0.1)}
    ans = parse_logprob_reply(_reply(top), labels)
    assert ans.probability_source == "logprob_readout"
    assert ans.covered_mass == pytest.approx(0.9)
    assert ans.probabilities["yes"] == pytest.approx(0.6 / 0.9)
    assert sum(ans.probabilities.values()) == pytest.approx(1.0)


def test_logprob_readout_without_any_label_is_unreadable():
    labels = readout_labels(to_decision_question(TEAM))
    with pytest.raises(UnreadableAnswer) as err:
        parse_logprob_reply(_reply({"The": -0.1, "I": -2.0}, token="The"), labels)
    assert err.value.raw_text == "The"


def test_readout_and_sampling_report_the_reference_confidence():
    """The confidence ``min_confidence`` reads is the conformance spec's formula on every backend."""
    from oracle.providers.decisions import reference_confidence

    yes_no = readout_labels(to_decision_question(Question(id="q", type="likelihood", instructions="x")))
    ans = parse_logprob_reply(_reply({"Yes": math.log(0.6), "No": math.log(0.2)}), yes_no)
    assert ans.probabilities["yes"] == pytest.approx(0.75)
    assert ans.confidence == pytest.approx(0.5)  # |2p - 1|, not the top probability 0.75
    levels = readout_labels(to_decision_question(POLITE))
    assert levels.kind == "score"
    ans = parse_logprob_reply(_reply({"A": math.log(0.1), "B": math.log(0.3), "C": math.log(0.6)}, token="C"),
                              levels)
    assert ans.confidence == pytest.approx(reference_confidence("score", [0.1, 0.3, 0.6])) == pytest.approx(0.25)
    team = readout_labels(to_decision_question(TEAM))
    ans = parse_samples(["A", "A", "B", "C"], team)
    assert ans.confidence == pytest.approx(reference_confidence("choice", [0.5, 0.25, 0.25])) == pytest.approx(0.25)


def test_samples_count_labels_and_unmatched_samples_lower_coverage():
    labels = readout_labels(to_decision_question(TEAM))
    ans = parse_samples(["A", "a.", "B)", "Hmm"], labels)
    assert ans.probability_source == "sampled"
    assert ans.probabilities == pytest.approx({"billing": 2 / 3, "technical": 1 / 3, "unclear": 0.0})
    assert ans.covered_mass == pytest.approx(0.75)
    with pytest.raises(UnreadableAnswer):
        parse_samples(["no idea", "?"], labels)


# --- scoring ------------------------------------------------------------------------------------

def test_score_levels_spread_over_1_to_5_and_most_likely_sets_the_score():
    v = read_answer(POLITE, _answer("polite", {"rude": 0.1, "neutral": 0.5, "polite": 0.4}),
                    coverage_floor=0.5)
    assert (v.selected, v.option_score, v.score) == ("neutral", 3.0, 0.5)
    assert v.raw_scale == (0, 2) and v.raw_score == pytest.approx(0.5 * 1 + 0.4 * 2)  # expected level index
    assert v.expected_score == pytest.approx(0.1 * 1 + 0.5 * 3 + 0.4 * 5)
    assert v.low_confidence and v.low_confidence_reasons == ["below_min_confidence"]
    # the probability wobbling does not move the score while the winner stays the same; confidence
    # is the reference formula (score: distance from the mode), 1 - 0.1 / (2/3) = 0.85 here
    w = read_answer(POLITE, _answer("polite", {"rude": 0.02, "neutral": 0.9, "polite": 0.08}),
                    coverage_floor=0.5)
    assert w.score == v.score and not w.low_confidence and w.confidence == pytest.approx(0.85)


def test_reversed_likelihood_scores_and_normalization():
    q = Question(id="q", type="likelihood", instructions="Did it leak a password?", scores={"yes": 1, "no": 5})
    v = read_answer(q, _answer("q", {"yes": 0.8, "no": 0.2}), coverage_floor=0.5)
    assert (v.selected, v.score) == ("yes", 0.0)
    assert [normalize_score(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_abstention_gives_no_score_and_refusal_is_recorded():
    v = read_answer(TEAM, _answer("team", {"billing": 0.2, "technical": 0.1, "unclear": 0.7}),
                    coverage_floor=0.5)
    assert v.abstained and v.score is None and v.selected == "unclear"
    assert question_mode_score([v], 0.5) == (None, None)
    r = read_answer(TEAM, _answer("team", {}, refused=True, refusal_reason="policy"), coverage_floor=0.5)
    assert r.refused and r.refusal_reason == "policy" and r.score is None


def test_covered_mass_below_the_floor_is_unreadable_never_a_verdict():
    with pytest.raises(UnreadableAnswer, match="coverage_floor=0.5") as info:
        read_answer(TEAM, _answer("team", {"billing": 0.9, "technical": 0.1, "unclear": 0.0},
                                  covered_mass=0.2), coverage_floor=0.5)
    assert info.value.covered_mass == 0.2
    v = read_answer(TEAM, _answer("team", {"billing": 0.9, "technical": 0.1, "unclear": 0.0},
                                  covered_mass=0.5), coverage_floor=0.5)   # at the floor: read
    assert v.score == 1.0 and not v.low_confidence


def test_an_exact_tie_is_always_low_confidence_and_recorded():
    q = Question(id="q", type="likelihood", instructions="ok?")
    v = read_answer(q, _answer("q", {"yes": 0.5, "no": 0.5}), coverage_floor=0.5)
    assert v.tie and v.low_confidence and v.low_confidence_reasons == ["tie"]
    assert v.selected == "yes" and v.score == 1.0                        # the rule's score stands
    t = read_answer(TEAM, _answer("team", {"billing": 0.4, "technical": 0.4, "unclear": 0.2}), coverage_floor=0.5)
    assert t.tie and t.low_confidence
    n = read_answer(q, _answer("q", {"yes": 0.51, "no": 0.49}), coverage_floor=0.5)
    assert not n.tie and not n.low_confidence


def test_confidence_without_a_reported_value_is_the_reference_formula_not_the_top_probability():
    """An answer that carries no confidence gets the System One formula here too (|2p - 1| for yes/no,
    distance above uniform for a choice, distance from the mode for a score)."""
    from oracle.providers.decisions import reference_confidence

    q = Question(id="q", type="likelihood", instructions="ok?", min_confidence=0.6)
    v = read_answer(q, _answer("q", {"yes": 0.75, "no": 0.25}), coverage_floor=0.5)
    assert v.confidence == pytest.approx(0.5) and v.low_confidence  # top probability 0.75 would pass 0.6
    c = read_answer(TEAM, _answer("team", {"billing": 0.5, "technical": 0.3, "unclear": 0.2}), coverage_floor=0.5)
    assert c.confidence == pytest.approx(reference_confidence("choice", [0.5, 0.3, 0.2])) == pytest.approx(0.25)


def test_unknown_labels_in_an_answer_are_unreadable():
    with pytest.raises(UnreadableAnswer):
        read_answer(TEAM, _answer("team", {"sales": 1.0}), coverage_floor=0.5)


def test_pass_rule_and_weighting_live_in_code():
    crit = [Criterion(criterion="a", weight=1), Criterion(criterion="b", weight=3),
            Criterion(criterion="c", weight=0)]
    qs = criterion_questions(crit)

    def verdicts(*ps):
        return [read_answer(q, _answer(q.id, {"yes": p, "no": 1 - p}), coverage_floor=0.5)
                for q, p in zip(qs, ps)]

    ok = criteria_verdict(crit, verdicts(0.9, 0.5, 0.6), 0.5)
    assert ok.passed is True
    assert ok.score == pytest.approx((0.9 + 3 * 0.5) / 4)  # weight 0 is out of the score
    # ... but still in the pass rule
    fail = criteria_verdict(crit, verdicts(0.9, 0.8, 0.1), 0.5)
    assert fail.passed is False and fail.score == pytest.approx((0.9 + 2.4) / 4)
    assert criteria_verdict(crit, verdicts(0.9, 0.8, 0.6), 0.7).passed is False


def test_order_reversal_averages_per_candidate_and_records_flips():
    fwd_q = Question(id="best", type="choice", instructions="x", options={"a": "", "b": ""},
                     scores={"a": 5, "b": 5})
    bwd_q = Question(id="best", type="choice", instructions="x", options={"b": "", "a": ""},
                     scores={"a": 5, "b": 5})
    f = read_answer(fwd_q, _answer("best", {"a": 0.7, "b": 0.3}), coverage_floor=0.5)
    b = read_answer(bwd_q, _answer("best", {"b": 0.6, "a": 0.4}), coverage_floor=0.5)
    m = merge_orders(f, b)
    assert m.probabilities == pytest.approx({"a": 0.55, "b": 0.45})
    assert m.order_flip and m.winners == ["a", "b"] and m.best == ["a"]
    assert m.confidence == pytest.approx(0.4)  # the weaker order's support for the winner
    b2 = read_answer(bwd_q, _answer("best", {"b": 0.2, "a": 0.8}), coverage_floor=0.5)
    assert not merge_orders(f, b2).order_flip


# --- validation ---------------------------------------------------------------------------------

def test_validation_picks_the_mode_and_rejects_input_without_questions():
    cand = [Trajectory(id="c", answer="x")]
    two = cand + [Trajectory(id="d")]
    assert validate_for_decision(Task(id="t", prompt="p", criteria=["ok"]), cand, label_limited=True)[1] == "criteria"
    # several candidates with criteria are judged one by one, never compared behind the task's back
    assert validate_for_decision(Task(id="t", prompt="p", criteria=["ok"]), two, label_limited=True)[1] == "criteria"
    compare = Question(id="best", type="choice", instructions="Which is best?", options={"d": "", "c": ""})
    assert validate_for_decision(Task(id="t", prompt="p", questions=[compare]), two,
                                 label_limited=True)[1] == "comparison"
    assert validate_for_decision(Task(id="t", prompt="p", reference="r", claim_check=True), cand,
                                 label_limited=True)[1] == "claim_check"
    with pytest.raises(TaskValidationError, match="task.questions"):
        validate_for_decision(Task(id="t", prompt="p"), cand, label_limited=True)
    with pytest.raises(TaskValidationError, match="task.questions"):  # no implicit comparison any more
        validate_for_decision(Task(id="t", prompt="p"), two, label_limited=True)


def test_validation_of_comparison_questions_and_unscored_choices():
    two = [Trajectory(id="c"), Trajectory(id="d")]
    compare = Question(id="best", type="choice", instructions="Which is best?", options={"c": "", "d": ""})
    team = TEAM.model_copy(update={"id": "team"})
    with pytest.raises(TaskValidationError, match=r"task.questions\[1\]: a comparison question .* 'team'"):
        validate_for_decision(Task(id="t", prompt="p", questions=[compare, team]), two, label_limited=True)
    with pytest.raises(TaskValidationError, match=r"task.questions\[0\].scores: a comparison question"):
        validate_for_decision(Task(id="t", prompt="p", questions=[
            compare.model_copy(update={"scores": {"c": 5, "d": 1}})]), two, label_limited=True)
    # options that are not the ids: a question about each candidate, which must map options to scores
    with pytest.raises(TaskValidationError, match=r"task.questions\[0\].scores: a choice question must map"):
        validate_for_decision(Task(id="t", prompt="p", questions=[compare]), two[:1] + [Trajectory(id="e")],
                              label_limited=True)


def test_validation_rejects_expected_output_without_reference_and_too_many_readout_labels():
    q = Question(id="q", type="likelihood", instructions="x", inputs=QuestionInputs(expected=True))
    with pytest.raises(TaskValidationError, match=r"questions\[0\].inputs.expected"):
        validate_for_decision(Task(id="t", prompt="p", questions=[q]), [Trajectory(id="c")], label_limited=False)
    many = Question(id="m", type="choice", instructions="x", options={f"o{i}": "" for i in range(30)},
                    scores={f"o{i}": 3 for i in range(30)})
    task = Task(id="t", prompt="p", questions=[many])
    with pytest.raises(TaskValidationError, match=r"questions\[0\].options"):
        validate_for_decision(task, [Trajectory(id="c")], label_limited=True)
    assert validate_for_decision(task, [Trajectory(id="c")], label_limited=False)[1] == "questions"


def test_calibration_file_round_trip_and_errors(tmp_path):
    import hashlib

    from oracle.config.calibration import CalibrationFile, ModelCalibration, load_calibration, write_calibration
    from oracle.errors import ConfigError

    path = tmp_path / "cal.json"
    sha = write_calibration(path, CalibrationFile(models={"m": ModelCalibration(
        pass_threshold=0.7, evidence={"n": 12})}))
    loaded = load_calibration(path)
    assert loaded.sha256 == sha == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.threshold_for("m") == 0.7 and loaded.threshold_for("other") is None
    path.write_text('{"models": {"m": {"pass_threshold": 0.7, "bogus": 1}}}')
    with pytest.raises(ConfigError, match="bogus"):
        load_calibration(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_calibration(tmp_path / "missing.json")
