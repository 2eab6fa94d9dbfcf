"""Commit-first grading against the scripted server (real HTTP): the judge answers the question
before it sees any candidate, then grades each candidate against its own answer."""

from __future__ import annotations

import json

from oracle.config.model import OracleConfig
from oracle.results.result import Status
from oracle.tasks.task import Task
from tests.plugins.scripted_server import chat_reply
from tests.test_llm_judge import block, ctx, evaluate, pairwise_reply, pointwise_json, seats, user_text

QUESTION = Task(id="capital", prompt="What is the capital of Australia?")
ANSWERS = {"right": "Canberra", "wrong": "Sydney, the largest city"}


def judge(own: str = "Canberra"):
    """Answers the commit question with ``own``; grades a response 9 when it contains the reference
    block's text, else 2 (pointwise), and prefers the seat that contains it (pairwise)."""

    def handler(req):
        text = user_text(req)
        if "answer the task below yourself" in text:
            return chat_reply(json.dumps({"answer": own}))
        reference = block(text, "reference") if "<reference" in text else None
        if 'id="B"' in text:
            a, _ = seats(req)
            return chat_reply(pairwise_reply("A" if reference and reference in a else "B"))
        return chat_reply(pointwise_json({"overall": 9 if reference and reference in block(text, "response") else 2}))

    return handler


def config(server, **judge_cfg) -> OracleConfig:
    return OracleConfig(providers={"judge": server.provider_settings(concurrency=1)},
                        llm_judge={"logprobs": False, "commit_first": True, **judge_cfg})


async def test_the_first_call_sees_no_candidate_and_the_grades_use_its_answer(scripted_server):
    scripted_server.set_handler(judge())
    cfg = config(scripted_server, mode="pointwise")
    res = await evaluate(cfg, ctx(cfg, QUESTION, *ANSWERS.values(), ids=list(ANSWERS)))
    assert res.status == Status.ok and res.calls == 3 and res.best == ["right"]
    first = [m["content"] for m in scripted_server.requests[0].json["messages"] if m["role"] != "system"]
    assert len(first) == 1 and "answer the task below yourself" in first[0]
    assert not any(a in first[0] for a in ANSWERS.values()) and "<response" not in first[0]
    assert "<reference" not in first[0]
    assert "What is the capital of Australia?" in user_text(scripted_server.requests[0])
    for r in scripted_server.requests[1:]:
        assert block(user_text(r), "reference") == "Canberra" and "you answered the task yourself" in user_text(r)
    assert res.details["commit_first"]["applied"] is True and res.details["commit_first"]["answer"] == "Canberra"
    assert res.provenance.calls[0].model_answered and len(res.provenance.calls) == 3
    assert "commit_user_v1" in res.provenance.prompt_templates
    assert res.candidate("right").details["reference_guided"] is True


async def test_pairwise_grades_against_the_own_answer_too(scripted_server):
    scripted_server.set_handler(judge())
    cfg = config(scripted_server, mode="pairwise")
    res = await evaluate(cfg, ctx(cfg, QUESTION, *ANSWERS.values(), ids=list(ANSWERS)))
    assert res.best == ["right"] and res.calls == 3 and res.details["order_inconsistent_pairs"] == []


async def test_a_wrong_own_answer_is_kept_and_decides(scripted_server):
    """The judge committed to a wrong answer: the result says so, so a reader can see why."""
    scripted_server.set_handler(judge(own="Sydney"))
    cfg = config(scripted_server, mode="pointwise")
    res = await evaluate(cfg, ctx(cfg, QUESTION, *ANSWERS.values(), ids=list(ANSWERS)))
    assert res.details["commit_first"]["answer"] == "Sydney" and res.best == ["wrong"]


async def test_not_applied_with_a_reference_or_a_long_answer(scripted_server):
    scripted_server.set_handler(judge())
    cfg = config(scripted_server, mode="pointwise")
    with_ref = Task(id="r", prompt="What is the capital of Australia?", reference="Canberra")
    res = await evaluate(cfg, ctx(cfg, with_ref, "Canberra"))
    assert res.details["commit_first"] == {"applied": False, "reason": "the task has a reference"}
    assert res.calls == 1 and not any("yourself" in user_text(r) for r in scripted_server.requests)
    res = await evaluate(cfg, ctx(cfg, QUESTION, "Canberra. " * 40))
    assert res.details["commit_first"]["applied"] is False
    assert "not a short answer" in res.details["commit_first"]["reason"]


async def test_an_unreadable_own_answer_grades_without_it_and_says_so(scripted_server):
    base = judge()

    def handler(req):
        if "answer the task below yourself" in user_text(req) or "could not be read" in user_text(req):
            return chat_reply("I think it is Canberra")
        return base(req)

    scripted_server.set_handler(handler)
    cfg = config(scripted_server, mode="pointwise")
    res = await evaluate(cfg, ctx(cfg, QUESTION, "Canberra"))
    assert res.details["commit_first"]["applied"] is False
    assert res.details["commit_first"]["reason"] == "the judge's own answer could not be read"
    assert res.calls == 3 and "<reference" not in user_text(scripted_server.requests[2])
