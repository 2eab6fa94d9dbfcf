"""Each policy family: when it votes, for what, and when it abstains."""

from __future__ import annotations

import pytest

from oracle.signals import extract
from oracle.task_file import parse_task
from policies import registered_policies
from tests.data.tasks import code_task, open_task, question_task


def sig(data):
    item = parse_task(data)
    return extract(item.task, item.trajectories)


def policy(name, weight=1.0):
    return registered_policies()[name](weight=weight)


def top(vote):
    return max(vote.scores, key=vote.scores.get)


def test_registry_lists_every_family():
    assert set(registered_policies()) == {"execution_evidence", "reference_answer", "closed_question",
                                          "open_ended_judgment", "pairwise_preference", "cue_balance",
                                          "difficulty"}


def test_votes_sum_to_one_and_carry_reads():
    for data in (code_task(), question_task(), open_task(criteria=["Is it polite?"])):
        s = sig(data)
        for name in registered_policies():
            vote = policy(name).vote(s)
            if vote is not None:
                assert sum(vote.scores.values()) == pytest.approx(1.0)
                assert vote.reason and vote.reads


def test_execution_evidence():
    p = policy("execution_evidence")
    assert top(p.vote(sig(code_task()))) == "verifier"
    untestable = code_task()
    untestable["task"].pop("tests")
    assert top(p.vote(sig(untestable))) == "llm_judge"
    assert p.vote(sig(open_task())) is None
    with_output = open_task()
    with_output["trajectories"][0]["output"] = "OK"
    assert top(p.vote(sig(with_output))) == "verifier"


def test_reference_answer():
    p = policy("reference_answer")
    assert p.vote(sig(open_task())) is None
    assert top(p.vote(sig(open_task(reference="Paris")))) == "verifier"
    assert top(p.vote(sig(open_task(reference="A long model answer. " * 30)))) == "llm_judge"


def test_closed_question():
    p = policy("closed_question")
    assert top(p.vote(sig(question_task()))) == "decision_judge"
    assert top(p.vote(sig(open_task(criteria=["Does it mention the dog?"])))) == "decision_judge"
    assert top(p.vote(sig(open_task(criteria=["Warmth", "Persuasiveness"])))) == "llm_judge"
    assert p.vote(sig(open_task())) is None


def test_open_ended_and_pairwise():
    j = policy("open_ended_judgment")
    assert top(j.vote(sig(open_task()))) == "llm_judge"
    assert j.vote(sig(open_task(prompt="2+2"))) is None
    pw = policy("pairwise_preference")
    assert top(pw.vote(sig(open_task()))) == "llm_judge"
    assert pw.vote(sig(code_task())) is None
    assert pw.vote(sig(question_task())) is None


def test_cue_balance_and_difficulty():
    c = policy("cue_balance")
    assert top(c.vote(sig(code_task()))) == "verifier"
    assert top(c.vote(sig(open_task()))) == "llm_judge"
    assert c.vote(sig(open_task(prompt="zzz qqq"))) is None
    d = policy("difficulty")
    assert d.vote(sig(open_task())) is None
    assert top(d.vote(sig(open_task(difficulty="hard")))) == "llm_judge"
    assert d.vote(sig(open_task(difficulty="easy"))).scores["llm_judge"] < 0.3
