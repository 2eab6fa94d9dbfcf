"""Our System One client against a server we did not write: jevcompat's reference server.

``jevcompat mock`` runs as a real subprocess on a loopback port, and our decision client asks it
likelihood (noul), choice and score questions in one call, at the documented limits (255 options,
10 levels), with the model alias ``jev-latest``: once clean, then once per fault that
``jevcompat mock`` injects (its fault table, which ``--list-faults`` prints, read at collection
time, so a fault added in a new jevcompat version is covered without touching this file). For
every fault the outcome must be either the clean server's verdict (same chosen option, same
probabilities, same confidence) or a ``ProviderError`` whose message says what was wrong; never a
different verdict.

The exception, by construction: faults that break a §7 *semantics* requirement (the question id,
the batch size or the question order feeding the model) give well-formed answers from what is, to
any client, simply a different model. One reply cannot reveal them; ``jevcompat test`` finds them
by comparing requests. For those the test asserts only that the reply is well-formed and accepted.
"""

from __future__ import annotations

import random
import re

import pytest

from oracle.config.model import ProviderSettings
from oracle.errors import ProviderError
from oracle.providers import DecisionReply, DecisionRequest, make_decision_client
from oracle.providers.decisions import SystemOneFormat, reference_confidence
from oracle.tasks.questions import MAX_CHOICE_OPTIONS, MAX_SCORE_LEVELS, Question
from oracle.strategies.decision_judge.requests import to_decision_question
from tests.plugins.jevcompat_server import jevcompat_mock

KEY = "k-conformance"
MODEL_ALIAS = "jev-latest"


def _list_faults() -> list[tuple[str, str, str]]:
    """(name, requirement broken, what it does) for every fault this jevcompat version injects.

    Read from the table ``jevcompat mock --list-faults`` prints, in this process: collecting the
    suite starts no subprocess (tests/test_collection.py)."""
    from jevcompat.mock import FAULTS as TABLE

    faults = [(name, req, what) for name, (req, what) in TABLE.items()]
    assert len(faults) >= 10, f"jevcompat.mock.FAULTS lists too few faults: {sorted(TABLE)}"
    return faults


FAULTS = _list_faults()
REQUIREMENT = {name: req for name, req, _ in FAULTS}

QUESTIONS = [
    Question(id="correct", type="likelihood", instructions="Is the answer correct?"),
    Question(id="tone-of.voice", type="choice", instructions="Which register is the answer written in?",
             options={"Formal": "business register", "Casual": "chatty", "Café": "as spoken in a café"},
             scores={"Formal": 5, "Casual": 3, "Café": 1}),
    Question(id="quality", type="score", instructions="How good is the answer?", levels=["poor", "fair", "good"]),
    Question(id="wide", type="choice", instructions="Which catalogue entry matches the answer?",
             options={f"Opt{i:03d}": f"catalogue entry {i}" for i in range(MAX_CHOICE_OPTIONS)},
             scores={f"Opt{i:03d}": 1 + i % 5 for i in range(MAX_CHOICE_OPTIONS)}),
    Question(id="fine", type="score", instructions="Rate the answer finely.",
             levels=[f"level {i}" for i in range(MAX_SCORE_LEVELS)]),
]
BY_ID = {q.id: q for q in QUESTIONS}
REQUEST = DecisionRequest(state={"prompt": "What is 6 x 7?", "response": "42, obviously."},
                          questions=[to_decision_question(q) for q in QUESTIONS])

# What the error must say, for the faults whose effect we know (a new fault gets the generic check).
EXPECTED_REASON = {
    "wrong-route": r"HTTP 404 .*No route /v1/systemone",
    "xssi-200": r"not valid JSON",
    "auth-rejects-header": r"HTTP 401 .*takes no key",
    "auth-x-api-key": r"HTTP 403 .*Must supply an API key",
    "reject-jev-latest": r"HTTP 404 .*Model not served: jev-latest",
    "first-question-only": r"no answer for question 'tone-of.voice'",
    "strict-ids": r"HTTP 422 .*questions.tone-of.voice: Question id must match",
    "nfd-keys": r"'tone-of.voice'.*Unicode normalisation",
    "cap-64": r"HTTP 422 .*questions.wide.choice.criteria: .*at most 64",
    "cap-5-levels": r"HTTP 422 .*questions.fine.score.criteria: .*at most 5",
    "extra-answer": r"not asked: \['__extra__'\]",
    "boolean-type": r"'correct' has type 'boolean', expected 'noul'",
    "nan": r"NaN or Infinity at reply.x_debug",
    "noul-range": r"'correct': 1\.\d+ is not a probability",
    "choice-key-case": r"'tone-of.voice'.*letter case",
    "choice-sum": r"sum to 1\.200",
    "choice-second": r"is not the most probable option",
    "legend-1-based": r"'quality'.*legend keys .*1-based",
    "score-keys-1-based": r"'quality'.*score probability keys .*1-based",
    "score-sum": r"'quality'.*sum to 0\.800",
    "score-argmax": r"is not the expectation",
    "confidence-over": r"confidence 1\.5 is not in \[0, 1\]",
}
ONLY_WHEN = {"auth-rejects-header": "open", "auth-x-api-key": "keyed"}
"""Auth faults bite in one mode only: rejecting a key when auth is off, reading the wrong header."""


def _ask(base_url: str, api_key: str | None = None) -> DecisionReply:
    settings = ProviderSettings(kind="systemone", base_url=base_url, model=MODEL_ALIAS, api_key=api_key,
                                timeout_s=20, deadline_s=60, max_retries=1, backoff_base_s=0.0)
    with make_decision_client(settings) as client:
        return client.decide(REQUEST)


def _verdict(reply: DecisionReply) -> dict[str, tuple[str, dict[str, float], float]]:
    """Per question: the chosen label, the probabilities and our confidence."""
    out = {}
    for q in QUESTIONS:
        answer = reply.answers[q.id]
        assert not answer.refused, f"{q.id}: refused"
        assert set(answer.probabilities) == set(q.labels())
        chosen = max(q.labels(), key=answer.probabilities.__getitem__)
        out[q.id] = (chosen, answer.probabilities, answer.confidence)
    return out


def _assert_same_verdict(got: dict, clean: dict) -> None:
    for qid, (chosen, probs, confidence) in clean.items():
        assert got[qid][0] == chosen, f"{qid}: chose {got[qid][0]!r}, the clean server's verdict is {chosen!r}"
        assert got[qid][1] == pytest.approx(probs, abs=1e-6), f"{qid}: probabilities differ from the clean server's"
        assert got[qid][2] == pytest.approx(confidence, abs=1e-6), f"{qid}: confidence differs"


@pytest.fixture(scope="module")
def clean_reply() -> DecisionReply:
    with jevcompat_mock() as url:
        return _ask(url)


def test_clean_server_answers_every_question_at_the_limits(clean_reply):
    reply = clean_reply
    assert set(reply.answers) == set(BY_ID)
    assert reply.provenance.model_requested == MODEL_ALIAS
    assert reply.provenance.model_answered == "jevcompat-mock-0.1"
    assert reply.usage.input_tokens and reply.usage.input_tokens > 0
    verdict = _verdict(reply)
    assert len(reply.answers["wide"].probabilities) == MAX_CHOICE_OPTIONS
    assert len(reply.answers["fine"].probabilities) == MAX_SCORE_LEVELS
    for q in QUESTIONS:
        answer = reply.answers[q.id]
        assert sum(answer.probabilities.values()) == pytest.approx(1.0)
        kind = q.type
        ordered = [answer.probabilities[label] for label in q.labels()]
        assert answer.confidence == pytest.approx(reference_confidence(kind, ordered))
        if q.type == "likelihood":
            assert answer.server_confidence is None  # the spec gives noul no confidence
        else:  # the reference server follows the reference formula, so ours agrees with its value
            assert answer.server_confidence == pytest.approx(answer.confidence, abs=1e-9)
    assert verdict["correct"][0] in ("yes", "no")


def test_clean_server_with_a_key_gives_the_same_verdict(clean_reply):
    with jevcompat_mock(key=KEY) as url:
        _assert_same_verdict(_verdict(_ask(url, api_key=KEY)), _verdict(clean_reply))


@pytest.mark.parametrize("auth", ["open", "keyed"])
@pytest.mark.parametrize("fault", [name for name, _, _ in FAULTS])
def test_each_fault_gives_the_clean_verdict_or_a_failure_that_says_why(clean_reply, fault, auth):
    """open: the server takes no key and we send one anyway; keyed: it requires ours."""
    requirement = REQUIREMENT[fault]
    expected = EXPECTED_REASON.get(fault) if ONLY_WHEN.get(fault, auth) == auth else None
    with jevcompat_mock((fault,), key=KEY if auth == "keyed" else None) as url:
        try:
            reply = _ask(url, api_key=KEY)
        except ProviderError as exc:
            message = str(exc)
            assert not requirement.startswith("semantics."), f"a well-formed semantic fault was refused: {message}"
            if expected:
                assert re.search(expected, message), f"{fault}: the error does not say why: {message}"
            else:  # a fault this file does not know yet: the message names the HTTP status and the
                # server's words, or the question / part of the reply that was wrong
                assert re.search(r"HTTP \d{3} .*: \S|answer to '|reply ", message), message
            return
    verdict = _verdict(reply)  # well-formed: every question answered with a full distribution
    if requirement.startswith("semantics."):
        return  # a different model, to one reply; see the module docstring
    assert expected is None, f"{fault} was accepted; expected a failure matching {expected!r}"
    _assert_same_verdict(verdict, _verdict(clean_reply))


@pytest.mark.parametrize("fault", [None] + [name for name, req, _ in FAULTS if req.startswith("auth.")])
@pytest.mark.parametrize("client_key", [None, "wrong-key"])
def test_a_missing_or_wrong_key_fails_with_the_servers_reason(fault, client_key):
    with jevcompat_mock((fault,) if fault else (), key=KEY) as url:
        with pytest.raises(ProviderError) as caught:
            _ask(url, api_key=client_key)
    message = str(caught.value)
    assert re.search(r"HTTP 40[13] .*: \S", message), message
    assert re.search(r"API key|authenticate|Unauthorized|bad key", message), message


@pytest.mark.parametrize("fault", [None, "error-flat", "text-errors"])
def test_an_unknown_model_fails_with_the_servers_words(fault):
    settings = ProviderSettings(kind="systemone", model="no-such-model", max_retries=0, base_url="http://x/v1")
    with jevcompat_mock((fault,) if fault else ()) as url:
        with make_decision_client(settings.model_copy(update={"base_url": url})) as client:
            with pytest.raises(ProviderError, match=r"HTTP 400 .*Unknown model: no-such-model"):
                client.decide(REQUEST)


def test_our_request_shapes_pass_jevcompats_request_validator():
    """jevcompat's request validator (the reference server's) accepts every body we build."""
    from jevcompat.mock import MockConfig, validate_request

    settings = ProviderSettings(kind="systemone", base_url="http://127.0.0.1:9/v1", model=MODEL_ALIAS)
    wire = SystemOneFormat(settings)
    for state in (REQUEST.state, "plain text state"):
        body = wire.build_body(DecisionRequest(state=state, questions=REQUEST.questions))
        assert body["model"] == MODEL_ALIAS
        assert validate_request(body, MockConfig()) == []
    # and the validator can fail: it rejects what the spec forbids
    bad = wire.build_body(REQUEST)
    bad["questions"]["quality"]["criteria"] = {"0": "poor", "1": "good"}
    assert validate_request(bad, MockConfig())


def test_question_model_accepts_and_refuses_at_the_documented_limits():
    options = {f"o{i}": "" for i in range(MAX_CHOICE_OPTIONS)}
    Question(id="c", type="choice", instructions="?", options=options, scores={k: 3 for k in options})
    Question(id="s", type="score", instructions="?", levels=["a", "b"])
    Question(id="s", type="score", instructions="?", levels=[str(i) for i in range(MAX_SCORE_LEVELS)])
    too_many = {**options, "one more": ""}
    with pytest.raises(ValueError, match="at most 255"):
        Question(id="c", type="choice", instructions="?", options=too_many, scores={k: 3 for k in too_many})
    with pytest.raises(ValueError, match="at most 10"):
        Question(id="s", type="score", instructions="?", levels=[str(i) for i in range(MAX_SCORE_LEVELS + 1)])
    with pytest.raises(ValueError, match="at least two"):
        Question(id="s", type="score", instructions="?", levels=["only"])


def test_reference_confidence_matches_the_spec_formula():
    """Checked against jevcompat's reference functions on random distributions, and by hand."""
    from jevcompat.validate import choice_confidence, score_confidence

    rng = random.Random(13)
    for _ in range(300):
        n = rng.randint(2, 12)
        raw = [rng.random() ** 3 for _ in range(n)]
        probs = [x / sum(raw) for x in raw]
        assert reference_confidence("choice", probs) == pytest.approx(choice_confidence(probs), abs=1e-12)
        assert reference_confidence("score", probs) == pytest.approx(score_confidence(probs), abs=1e-12)
    assert reference_confidence("choice", [0.25] * 4) == 0.0
    assert reference_confidence("choice", [1.0, 0.0, 0.0]) == 1.0
    assert reference_confidence("likelihood", [0.9, 0.1]) == pytest.approx(0.8)
    assert reference_confidence("score", [0.0, 1.0, 0.0]) == 1.0
    assert reference_confidence("score", [0.5, 0.0, 0.5]) == 0.0  # two far-apart modes: no confidence
