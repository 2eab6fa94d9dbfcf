"""The router: determinism, gates, override, fallback, golden traces, bounded cost on huge prompts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.config.model import OracleConfig, PolicySettings, RoutingConfig
from oracle.results.result import OracleResult
from oracle.routing.route import Route, route_adapter
from oracle.routing._chain import PolicyChain
from oracle.tasks.files import parse_task
from tests.data.tasks import code_task, open_task, question_task
from tests.profiles import examples

GOLDEN = Path(__file__).parent / "golden"
REGEN_FLAG = "ORACLE_REGEN_GOLDEN"
"""Golden files are (re)written only when this environment variable is 1; a missing one fails."""
CHAIN = PolicyChain(OracleConfig())
ROUTE = route_adapter()


def route(data, chain=CHAIN, history=None):
    item = parse_task(data)
    return chain.route(item.task, item.trajectories, history=history)


def read(r, vote):
    """The values of the signals ``vote`` read, from the route's signals."""
    return {name: r.signals[name] for name in vote.reads}


def stable(r):
    d = ROUTE.dump_python(r, mode="json")
    d.pop("elapsed_us")
    # The hash is pinned by test_trace_contents; golden files must not churn when config grows.
    assert d.pop("config_hash") == CHAIN.config_hash
    return json.dumps(d, sort_keys=True, indent=1)


def test_basic_routes():
    assert route(code_task()).evaluator == "verifier"
    assert route(question_task()).evaluator == "decision_judge"
    assert route(open_task()).evaluator == "llm_judge"


def test_trace_contents():
    r = route(code_task())
    assert r.schema_version == "2" and r.config_hash == OracleConfig().hash()
    assert {v.policy for v in r.votes} | set(r.abstained) == set(OracleConfig().routing.policies)
    assert r.policies == {p.name: p.version for p in CHAIN.policies} and set(r.policies) == set(r.abstained) | {
        v.policy for v in r.votes}
    ev = next(v for v in r.votes if v.policy == "execution_evidence")
    assert ev.version == "2" and ev.settings == {}  # default settings: none changed
    assert ev.reads == ("has_repository", "tests_runnable", "has_tests", "language", "has_execution_output",
                        "has_code")
    assert ev.weight == 3.0 and read(r, ev) == {"has_repository": False, "tests_runnable": True, "has_tests": True,
                                                "language": "python", "has_execution_output": False,
                                                "has_code": True}
    totals = {k: 0.0 for k in r.totals}
    for v in r.votes:
        for k, s in v.scores.items():
            totals[k] += v.weight * s
    assert totals == pytest.approx(r.totals)
    assert 0 < r.confidence <= 1 and r.runner_up and r.margin == pytest.approx(
        r.confidence - r.totals[r.runner_up] / sum(r.totals[g.evaluator] for g in r.gates if g.feasible))


def test_override_wins_and_is_recorded():
    r = route(code_task(evaluator="llm_judge"))
    assert r.evaluator == "llm_judge" and r.override


def test_infeasible_override_yields_no_evaluator():
    r = route(open_task(evaluator="verifier"))
    assert r.evaluator is None and r.override and "infeasible" in r.fallback


def test_low_confidence_falls_back_and_says_so():
    cfg = OracleConfig(routing=RoutingConfig(threshold=0.99, default_evaluator="llm_judge"))
    r = route(code_task(), PolicyChain(cfg))
    assert r.evaluator == "llm_judge" and r.low_confidence and "below threshold" in r.fallback


def test_no_votes_fall_back_to_default():
    only_difficulty = {name: PolicySettings(enabled=name == "difficulty") for name in OracleConfig().routing.policies}
    cfg = OracleConfig(routing=RoutingConfig(policies=only_difficulty))
    assert [p.name for p in PolicyChain(cfg).policies] == ["difficulty"]
    r = route(open_task(), PolicyChain(cfg))
    assert r.evaluator == "llm_judge" and r.low_confidence and "no policy voted" in r.fallback


def test_disabled_evaluator_is_gated():
    cfg = OracleConfig(routing=RoutingConfig(enabled_evaluators=("llm_judge", "decision_judge")))
    r = route(code_task(), PolicyChain(cfg))
    assert r.evaluator == "llm_judge"
    assert any(g.evaluator == "verifier" and not g.feasible for g in r.gates)


def answer_key_task(reference="Jane Austen", n=4):
    """The issue's case: a factual question, a short reference, several candidates."""
    answers = ["Pride and Prejudice was written by Jane Austen.", "Charlotte Brontë", "It was not Jane Austen",
               "Austen, Brontë or Shelley"]
    return {"task": {"id": "pp", "prompt": "Who wrote Pride and Prejudice?", "reference": reference},
            "trajectories": [{"id": f"c{i}", "answer": answers[i % 4]} for i in range(n)]}


@pytest.mark.parametrize("name,data", [("code", code_task()), ("question", question_task()),
                                       ("open", open_task()), ("override", code_task(evaluator="llm_judge")),
                                       ("answer_key", answer_key_task())])
def test_golden_traces(name, data):
    path = GOLDEN / f"route_{name}.json"
    got = stable(route(data))
    if os.environ.get(REGEN_FLAG) == "1":
        path.write_text(got + "\n")
    assert path.exists(), f"golden file {path} is missing; write it with {REGEN_FLAG}=1 and review the diff"
    assert got + "\n" == path.read_text(), f"route changed; rerun with {REGEN_FLAG}=1 if intended ({path})"


def test_several_candidates_with_an_answer_key_are_a_reference_check():
    """Four answers to a factual question with a short reference: each is right or wrong against
    the key, so the route is the verifier's and the trace says why (the signal, the vote, the
    abstention). One notion and one threshold: reference_answer's short_reference_chars."""
    for n in (1, 2, 4):
        r = route(answer_key_task(n=n))
        assert r.evaluator == "verifier" and not r.low_confidence, n
        assert r.signals["has_answer_key"] is True and "pairwise_preference" in r.abstained
        vote = _vote(r, "reference_answer")
        assert vote.reason.startswith("reference check: a short reference (11 chars) is an answer key")
        assert read(r, vote)["has_answer_key"] is True
    # A long reference guides a judge: several answers are then a preference again.
    long = route(answer_key_task(reference="Jane Austen, " + "an English novelist " * 12, n=4))
    assert long.signals["has_answer_key"] is False and long.evaluator == "llm_judge"
    assert "pairwise_preference" not in long.abstained
    # The threshold is reference_answer's own setting, read once into the signal.
    tight = PolicyChain(OracleConfig.model_validate(
        {"routing": {"policies": {"reference_answer": {"short_reference_chars": 5}}}}))
    r = route(answer_key_task(n=4), tight)
    assert r.signals["has_answer_key"] is False and r.evaluator == "llm_judge"
    assert _vote(r, "reference_answer").reason.startswith("long reference (11 chars)")
    # ... also when reference_answer itself is switched off: the signal is the task's, not the vote's.
    off = PolicyChain(OracleConfig.model_validate(
        {"routing": {"policies": {"reference_answer": {"enabled": False, "short_reference_chars": 5}}}}))
    assert route(answer_key_task(n=4), off).signals["has_answer_key"] is False
    # Candidate code beside a short reference is no answer key (judge the code).
    coded = answer_key_task(n=2)
    coded["trajectories"][0]["code"] = "def author():\n    return 'Jane Austen'\n"
    r = route(coded)
    assert r.signals["has_answer_key"] is False
    assert "candidate code is no answer key" in _vote(r, "reference_answer").reason


def test_numbers_that_decide_a_route_are_config():
    """A spread or threshold changed in the config changes the vote and the config hash."""
    base = OracleConfig()
    tweaked = OracleConfig.model_validate({"routing": {"policies": {
        "execution_evidence": {"runnable_tests": {"verifier": 0.1, "llm_judge": 0.9}}}}})
    assert tweaked.hash() != base.hash()
    a, b = route(code_task()), route(code_task(), PolicyChain(tweaked))
    vote_a = next(v for v in a.votes if v.policy == "execution_evidence")
    vote_b = next(v for v in b.votes if v.policy == "execution_evidence")
    assert vote_a.scores["verifier"] == pytest.approx(0.9) and vote_b.scores["verifier"] == pytest.approx(0.1)
    assert vote_b.settings == {"runnable_tests": {"verifier": 0.1, "llm_judge": 0.9}}
    assert b.config_hash == tweaked.hash() != a.config_hash
    short_ref = OracleConfig.model_validate(
        {"routing": {"policies": {"reference_answer": {"short_reference_chars": 3}}}})
    vote = next(v for v in route(open_task(reference="Paris"), PolicyChain(short_ref)).votes
                if v.policy == "reference_answer")
    assert vote.reason.startswith("long reference")


def _huge(field: str, size: int) -> dict:
    data = code_task()
    data["task"]["criteria"] = ["Does it work?"]
    data["trajectories"][0]["output"] = "ok"
    filler = ("Explain recursion clearly, return the sum. " * (size // 40 + 1))[:size]
    if field == "prompt":
        data["task"]["prompt"] = filler
    elif field == "criteria":
        data["task"]["criteria"] = [filler + "?"]
    elif field == "answers":
        for t in data["trajectories"]:
            t["answer"] = filler
    else:
        for t in data["trajectories"]:
            t["output"] = filler
    return data


@pytest.mark.parametrize("field", ["prompt", "criteria", "answers", "outputs"])
def test_megabyte_fields_route_in_bounded_time(field):
    small, big = parse_task(_huge(field, 100)), parse_task(_huge(field, 1_000_000))
    def best_of(item):
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            CHAIN.route(item.task, item.trajectories)
            best = min(best, time.perf_counter() - t)
        return best
    # Every text a signal reads is read up to a bound: a 1 MB field costs about what a small one does
    # (a full scan of 1 MB would take milliseconds; the generous factor absorbs a busy machine).
    assert best_of(big) < 5 * best_of(small) + 0.002
    # ... and still answers from what it read: the same route, the same signals but the lengths
    a, b = route(_huge(field, 100)), route(_huge(field, 1_000_000))
    assert a.evaluator == b.evaluator
    differ = {k for k in a.signals if a.signals[k] != b.signals[k]}
    assert differ <= {"prompt_chars", "mean_answer_chars", "verifiable_cue_density", "judgment_cue_density"}


criteria_st = st.lists(st.sampled_from(["Does it answer?", "Is it polite?", "Warmth", "Clarity of the reasoning"]),
                       max_size=3)


@st.composite
def tasks(draw):
    task = {"id": "h", "prompt": draw(st.text(max_size=200)),
            "criteria": draw(criteria_st)}
    if draw(st.booleans()):
        task["tests"] = [{"kind": "assert", "code": "assert True"}]
    if draw(st.booleans()):
        task["reference"] = draw(st.text(min_size=1, max_size=300))
    if draw(st.booleans()):
        task["questions"] = [{"id": "q", "type": "likelihood", "instructions": "Is it right?"}]
    task["difficulty"] = draw(st.sampled_from([None, "easy", "medium", "hard"]))
    if draw(st.booleans()):
        task["evaluator"] = draw(st.sampled_from(["decision_judge", "llm_judge", "verifier"]))
    n = draw(st.integers(1, 4))
    trajs = [{"id": f"c{i}", "answer": draw(st.text(max_size=80)),
              **({"code": "x = 1"} if draw(st.booleans()) else {})} for i in range(n)]
    return {"task": task, "trajectories": trajs}


@settings(max_examples=examples(150), deadline=None)
@given(tasks())
def test_property_deterministic_gated_override(data):
    a, b = route(data), route(data)
    assert stable(a) == stable(b)
    feasible = {g.evaluator for g in a.gates if g.feasible}
    forced = data["task"].get("evaluator")
    if forced is not None:
        assert a.override
        assert a.evaluator == (forced if forced in feasible else None)
    if a.evaluator is not None:
        assert a.evaluator in feasible
    # The router builds its Route without validating it; validation at the boundary must accept it
    # unchanged (a wrong type or a stray key in what the router builds fails here).
    assert ROUTE.validate_json(ROUTE.dump_json(a)) == a
    assert ROUTE.validate_python(ROUTE.dump_python(a)) == a


def test_a_route_owns_its_trace():
    """Editing one route's trace (a caller may) changes no other route: nothing is shared."""
    chain = PolicyChain(OracleConfig.model_validate({"routing": {"policies": {
        "execution_evidence": {"runnable_tests": {"verifier": 0.1, "llm_judge": 0.9}}}}}))
    item = parse_task(code_task())
    first = chain.route(item.task, item.trajectories)
    expected = ROUTE.dump_python(chain.route(item.task, item.trajectories))
    assert any(v.settings.get("runnable_tests") for v in first.votes)  # nested settings
    for vote in first.votes:
        vote.scores.clear()
        vote.settings.clear()
        vote.settings["extra"] = {"x": 1}
    first.gates.clear()
    first.policies.clear()
    first.totals.clear()
    first.signals.clear()
    again = ROUTE.dump_python(chain.route(item.task, item.trajectories))
    expected.pop("elapsed_us")
    again.pop("elapsed_us")
    assert again == expected


def test_route_validation_refuses_bad_traces():
    """Routes read back from outside are validated: unknown keys and wrong types are refused."""
    item = parse_task(code_task())
    good = ROUTE.dump_python(PolicyChain(OracleConfig.load(env=False)).route(item.task, item.trajectories),
                             mode="json")
    vote = good["votes"][0]
    # A vote in the shape of schema 1 (never released): it copied the values it read and a spec.
    schema_1_vote = {**{k: v for k, v in vote.items() if k not in ("reads", "settings")},
                     "signals": {k: good["signals"][k] for k in vote["reads"]},
                     "spec": {"name": vote["policy"], "version": vote["version"], "weight": vote["weight"]}}
    for bad in ({**good, "surprise": 1}, {**good, "confidence": "high"},
                {**good, "votes": [{**vote, "weight": "heavy"}]}, {**good, "votes": [schema_1_vote]},
                {**good, "gates": [{"evaluator": "verifier", "feasible": True}]},
                {**good, "evaluator": "oracle_of_delphi"}):
        with pytest.raises(ValidationError):
            ROUTE.validate_python(bad)
        with pytest.raises(ValidationError):  # inside a result read back from a file or a reply
            OracleResult.model_validate({"task_id": "add", "status": "ok", "route": bad, "result": None})
    back = OracleResult.model_validate({"task_id": "add", "status": "ok", "route": good, "result": None})
    assert isinstance(back.route, Route) and ROUTE.dump_python(back.route, mode="json") == good


# ---- agent trajectories, claim checks, prior hardness (issue 17) --------------------------------
#
# Dev-suite-style cases written for these tests (none from the reserved records): a support agent
# that looks up an order, a refund agent, a research agent, and single claims with their evidence.

def _agent_run(cid: str, calls: list[tuple[str, dict]], answer: str) -> list[dict]:
    """An OpenAI-style message list: each call answered by its tool, then the final answer."""
    messages: list[dict] = [{"role": "user", "content": "Where is my order 1182?"}]
    for i, (tool, args) in enumerate(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"{cid}-{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"{cid}-{i}", "content": '{"status": "shipped"}'})
    messages.append({"role": "assistant", "content": answer})
    return messages


def _support_task(**task) -> dict:
    base = {"id": "support-agent-1182", "prompt": "You are a support agent. The customer asks where order 1182 "
                                                 "is. Look it up and tell them its status in one sentence."}
    base.update(task)
    return {"task": base, "trajectories": [
        _agent_run("a", [("lookup_order", {"order_id": "1182"})], "Your order 1182 has shipped."),
        _agent_run("b", [("search_web", {"q": "order 1182"})], "Your order 1182 has shipped."),
        _agent_run("c", [], "I could not find order 1182, sorry.")]}


def _vote(r, policy):
    return next((v for v in r.votes if v.policy == policy), None)


def test_tool_use_with_expected_calls_goes_to_the_verifier():
    expected = [{"kind": "tool_calls", "calls": [{"tool": "lookup_order", "args": {"order_id": "1182"}}],
                 "match": "superset"}]
    r = route(_support_task(tests=expected))
    assert r.signals["has_tool_steps"] and r.signals["has_trajectory_tests"]
    assert r.evaluator == "verifier" and not r.low_confidence
    vote = _vote(r, "tool_use")
    assert read(r, vote) == {"has_trajectory_tests": True, "has_tool_steps": True}
    assert max(vote.scores, key=vote.scores.get) == "verifier"
    result = [{"kind": "tool_result", "tool": "lookup_order", "expected": {"status": "shipped"}, "match": "subset"}]
    assert route(_support_task(tests=result)).evaluator == "verifier"


def test_agent_run_without_expected_calls_goes_to_a_judge_that_reads_the_steps():
    r = route(_support_task())
    assert r.signals["has_tool_steps"] and not r.signals["has_trajectory_tests"] and not r.signals["has_tests"]
    assert r.evaluator == "llm_judge"
    assert "reads the steps" in _vote(r, "tool_use").reason
    # The same answers without steps: the tool_use policy has nothing to say.
    plain = _support_task()
    plain["trajectories"] = [{"id": t, "answer": "Your order 1182 has shipped."} for t in "abc"]
    p = route(plain)
    assert not p.signals["has_tool_steps"] and "tool_use" in p.abstained


def _claim_task(prompt: str, n: int = 1, **task) -> dict:
    base = {"id": "claim-moon", "prompt": prompt,
            "context": "Apollo 11 landed on the Moon on 20 July 1969; Neil Armstrong stepped out first."}
    base.update(task)
    answers = ["Neil Armstrong was the first person to walk on the Moon, in 1969.",
               "Buzz Aldrin was the first person on the Moon."]
    return {"task": base, "trajectories": [{"id": f"c{i}", "answer": answers[i]} for i in range(n)]}


def test_claim_check_asked_in_the_prompt_goes_to_the_decision_judge():
    r = route(_claim_task("Is this claim supported by the context?"))
    assert r.evaluator == "decision_judge" and r.claim_check
    gate = next(g for g in r.gates if g.evaluator == "decision_judge")
    assert gate.feasible  # no question and no criteria: the claim opens the gate
    vote = _vote(r, "claim_check")
    seen = read(r, vote)
    assert seen["asks_claim_check"] and seen["has_context"] and seen["n_candidates"] == 1
    assert not seen["claim_check_requested"] and "asks to verify a claim" in vote.reason


def test_claim_check_requested_by_the_task_option():
    data = _claim_task("Neil Armstrong walked on the Moon first.", claim_check=True)
    data["task"].pop("context")
    data["task"]["reference"] = "Neil Armstrong was the first person to walk on the Moon (Apollo 11, 1969)."
    r = route(data)
    assert r.evaluator == "decision_judge" and r.claim_check
    assert r.signals["claim_check_requested"] and not r.signals["asks_claim_check"]
    assert _vote(r, "claim_check").reason.startswith("claim_check: true")


def test_no_claim_check_without_one_candidate_or_evidence():
    two = route(_claim_task("Is this claim supported by the context?", n=2))
    assert not two.signals["claim_checkable"] and not two.claim_check and "claim_check" in two.abstained
    bare = _claim_task("Is this claim supported by the context?")
    bare["task"].pop("context")
    r = route(bare)
    assert r.signals["asks_claim_check"] and not r.signals["claim_checkable"]
    assert not next(g for g in r.gates if g.evaluator == "decision_judge").feasible and not r.claim_check
    # Asking for a claim check is not the same as mentioning claims.
    assert not route(_claim_task("Write a claim form letter for a lost suitcase.")).claim_check


def test_prior_hardness_picks_the_strongest_feasible_check():
    history = {"add": 0.8, "support-1": 0.8, "essay": 0.8}
    coded = route(code_task(), history=history)
    assert coded.evaluator == "verifier" and coded.hard
    assert "the verifier" in _vote(coded, "difficulty").reason
    closed = route(question_task(), history=history)
    assert closed.evaluator == "decision_judge" and closed.hard
    # A short reference is an answer key: a judge by default, checked against the key once hard.
    qa = {"task": {"id": "qa", "prompt": "Which city is the capital of Australia? Answer in a friendly sentence.",
                   "reference": "Canberra"},
          "trajectories": [{"id": "a", "answer": "It's Canberra!"}, {"id": "b", "answer": "Sydney, of course."}]}
    assert route(qa).evaluator == "llm_judge" and not route(qa).hard
    hard_qa = route(qa, history={"qa": 0.8})
    assert hard_qa.evaluator == "verifier" and hard_qa.hard
    open_essay = route(open_task(), history=history)
    assert open_essay.evaluator == "llm_judge" and open_essay.hard
    assert "with repeats" in _vote(open_essay, "difficulty").reason
    assert not route(open_task(), history={"essay": 0.2}).hard


def test_hardness_threshold_and_stated_difficulty_are_config():
    strict = OracleConfig.model_validate({"routing": {"policies": {"difficulty": {"hard_history": 0.9,
                                                                                  "stated_hard": False}}}})
    chain = PolicyChain(strict)
    assert strict.hash() != OracleConfig().hash()
    r = route(open_task(difficulty="hard"), chain)
    assert not r.hard and "difficulty" in r.abstained  # stated hard does not count here
    assert route(open_task(difficulty="hard")).hard  # ... and does by default
    item = parse_task(open_task())
    assert not chain.route(item.task, item.trajectories, history={"essay": 0.8}).hard
    assert chain.route(item.task, item.trajectories, history={"essay": 0.95}).hard
    off = OracleConfig.model_validate({"routing": {"policies": {"difficulty": {"enabled": False}}}})
    assert not route(open_task(difficulty="hard"), PolicyChain(off)).hard
