"""Every signal: what it reads and its range."""

from __future__ import annotations

import dataclasses

import pytest

from oracle.routing.signals import Signals, extract
from oracle.tasks.files import parse_task
from tests.data.tasks import code_task, open_task, question_task
from tests.profiles import examples


def sig(data, **kw):
    item = parse_task(data)
    return extract(item.task, item.trajectories, **kw)


def test_code_task_signals():
    s = sig(code_task())
    assert s.has_tests and s.tests_runnable and s.n_tests == 1 and s.language == "python"
    assert s.has_code and s.code_share == 1.0
    assert not s.has_reference and s.reference_chars == 0
    assert s.n_candidates == 2 and s.n_questions == 0 and not s.has_closed_question
    assert 0 < s.verifiable_cue_density <= 1 and s.judgment_cue_density == 0


def test_signals_are_immutable_and_their_trace_names_every_field():
    s = sig(code_task())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.has_tests = False  # type: ignore[misc]
    assert s.as_dict() == dataclasses.asdict(s)
    assert list(s.as_dict()) == [f.name for f in dataclasses.fields(Signals)]
    with pytest.raises(TypeError, match="surprise"):
        Signals(**{**s.as_dict(), "surprise": 1})


def test_unrunnable_language():
    s = sig(code_task(language="cobol"))
    assert s.has_tests and not s.tests_runnable and s.language == "cobol"
    assert sig(code_task(language="js")).language == "javascript"


def test_question_and_criteria_signals():
    s = sig(question_task())
    assert s.n_questions == 1 and s.has_closed_question
    yes_no = sig(open_task(criteria=["Does it mention the dog?", "Is it under 100 words?"]))
    assert yes_no.n_criteria == 2 and yes_no.yes_no_criteria_share == 1.0 and yes_no.has_closed_question
    mixed = sig(open_task(criteria=["Does it mention the dog?", "Warmth of tone"]))
    assert mixed.yes_no_criteria_share == 0.5 and not mixed.has_closed_question


def test_judgment_scale_and_rationale():
    s = sig(open_task(prompt="Rate the essay on a scale of 1 to 10 and explain why."))
    assert s.asks_graded_scale and s.asks_rationale
    plain = sig(open_task(prompt="Translate 'cat' to French."))
    assert not plain.asks_graded_scale and not plain.asks_rationale
    assert sig(open_task()).judgment_cue_density > 0.02


def test_execution_output_reference_difficulty_history():
    data = open_task(reference="Paris", difficulty="hard")
    data["trajectories"][0]["output"] = "ran 3 tests, 3 passed"
    s = sig(data, history={"essay": 0.75})
    assert s.has_execution_output and s.has_reference and s.reference_chars == 5
    assert s.difficulty == "hard" and s.prior_hardness == 0.75
    assert sig(open_task(), history={"other": 1.0}).prior_hardness is None


def test_answer_key_is_a_short_reference_without_candidate_code():
    """One notion with one threshold (reference_answer's short_reference_chars, passed in)."""
    assert sig(open_task(reference="Paris")).has_answer_key
    assert not sig(open_task()).has_answer_key
    assert not sig(open_task(reference="   ")).has_answer_key  # blank is no reference
    assert sig(open_task(reference="x" * 200)).has_answer_key and not sig(open_task(reference="x" * 201)).has_answer_key
    assert not sig(open_task(reference="Paris"), answer_key_chars=4).has_answer_key
    assert sig(open_task(reference="Paris"), answer_key_chars=5).has_answer_key
    assert not sig(code_task(reference="5")).has_answer_key  # candidate code: judge or test the code


def test_code_detection_in_answers():
    data = open_task()
    data["trajectories"][0]["answer"] = "Here:\n```python\nprint(1)\n```"
    assert sig(data).has_code and sig(data).code_share == 0.5
    assert not sig(open_task()).has_code


def test_cue_density_uses_capped_prefix():
    filler = "explain " * 10
    long_prompt = "return the sum. " * 400 + filler * 20000
    s = sig(open_task(prompt=long_prompt))
    assert s.prompt_chars == len(long_prompt)
    assert s.judgment_cue_density == 0.0  # the judgment words sit far beyond the prefix
    assert sig(open_task(prompt=long_prompt), prefix_chars=10**7).judgment_cue_density > 0


from hypothesis import given, settings, strategies as st  # noqa: E402

from oracle.routing._text_cues import (asks_graded_scale, asks_rationale, cue_counts, has_code_line,  # noqa: E402
                                      is_yes_no_check, prompt_phrases)


@pytest.mark.parametrize("text, graded", [
    ("rate it on a scale of 1 to 10", True), ("score from 1 to 5", True), ("give 3-5 stars", True),
    ("a 7 to 9 point answer", True), ("out of 10, how good?", True), ("likert item", True),
    ("grade each answer", True), ("the scale of the problem", True),
    ("the pirate sailed", False), ("moderate it", False), ("a scoreboard", False), ("out of time", False),
    ("three stars in the sky", False), ("points to consider", False), ("", False),
])
def test_graded_scale_phrases(text, graded):
    assert asks_graded_scale(text) is graded
    assert prompt_phrases(text, "")[0] is graded


@pytest.mark.parametrize("text, rationale", [
    ("explain why it fails", True), ("please justify", True), ("give reasons", True),
    ("give your reason", True), ("show your work", True), ("why is the sky blue", True),
    ("with an explanation", True), ("the reasoning behind it", True),
    ("explain the code", False), ("unjustified", False), ("give me a list", False), ("whys", False), ("", False),
])
def test_rationale_phrases(text, rationale):
    assert asks_rationale(text) is rationale
    assert prompt_phrases(text, "")[1] is rationale


# Pieces that sit on every edge of the phrases: starts glued to letters, digits, "_" and non-ASCII
# letters, Unicode digits and spaces in number ranges, scale words inside other words.
_PHRASE_PIECES = ["rate it", "on a scale", "scale of", "1-5 stars", "1 to 10 points", "0-100 scale", "score from",
                  "out of 10", "out of time", "likert", "grade each", "explain why", "justify", "rationale",
                  "give reasons", "give your reason", "why is", "with an explanation", "show your work",
                  "reasoning behind", "pirate", "start", "pointer", "\u00e9", "\u2014", "_", "9", "\u00a0", "\u2003",
                  "\uff11\uff12", "\u0663", "\u00b2", "\n", " ", "\x1c", "\x0b", "-", "to", "x", "star", "point",
                  "scale", "rate ", "give ", "why", "stars", "is this claim supported", "claim", "fact-check",
                  "verify the statement", "supported by the context", "does the evidence support", "factorial"]


@settings(max_examples=examples(3000), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PHRASE_PIECES), st.text(max_size=3)), max_size=10))
def test_scale_or_rationale_prefilter_never_hides_a_phrase(pieces):
    """The RE2 prefilter is a superset: the one-pass answer always equals the exact checks'."""
    from oracle.routing._text_cues import asks_claim_check

    text = "".join(pieces)
    prompt = text[: len(text) // 2]
    assert prompt_phrases(text, prompt) == (asks_graded_scale(text), asks_rationale(text), asks_claim_check(prompt))


@pytest.mark.parametrize("text, claim", [
    ("is this claim supported by the passage?", True), ("verify the claim below", True), ("fact-check it", True),
    ("is the statement true?", True), ("does the context support the answer?", True),
    ("check whether the statement holds", True), ("supported by the evidence?", True),
    ("write a claim form", False), ("the function supports lists", False), ("compute the factorial", False),
    ("is the answer correct?", False), ("", False),
])
def test_claim_check_phrases(text, claim):
    from oracle.routing._text_cues import asks_claim_check

    assert asks_claim_check(text) is claim
    assert prompt_phrases(text, text)[2] is claim


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["return", "returns", "essay", "explained", "sum", "x", "_", "\u00e9",
                                           "compute", "poem", "\u2003", "1", " ", "\n"]), st.text(max_size=4)),
                max_size=30))
def test_cue_counts_count_each_word_once(pieces):
    from oracle.routing._text_cues import JUDGMENT_FORMS, VERIFIABLE_FORMS, _LETTERS_ONLY

    text = "".join(pieces).lower()
    spaced = text if text.isascii() else " ".join(text.split())
    words = spaced.encode().translate(_LETTERS_ONLY).split()
    assert cue_counts(text) == (len(words), sum(w in VERIFIABLE_FORMS for w in words),
                                sum(w in JUDGMENT_FORMS for w in words))


@pytest.mark.parametrize("text, code", [
    ("def f(x):\n    return x", True), ("text\n    import os", True), ("from a import b", True),
    ("\treturn 1", True), ("const x = 1;", True), ("#include <stdio.h>", True),
    ("the function returns", False), ("from here on", False), ("defined below", False),
    ("returning home", False), ("x = 1", False),
])
def test_code_lines(text, code):
    assert has_code_line(text) is code


def test_code_lines_read_up_to_end_only():
    text = "prose\n" * 100 + "\t  def f():\n"
    assert has_code_line(text) and not has_code_line(text, 600)
    assert has_code_line(text, len(text) - 1)  # "def " is whole before the last newline
    assert not has_code_line(text, len(text) - 9)  # cut inside "def f"
    assert has_code_line("x\n\rreturn 1") is False  # only spaces and tabs may open a code line
    assert has_code_line("x\nreturn") and not has_code_line("x\nreturned")


@pytest.mark.parametrize("text, yes_no", [
    ("Does it mention the dog?", True), ("  is it polite", True), ("Must cite a source", True),
    ("The response includes a date", True), ("Cites a source?", True), ("Correct (yes/no)", True),
    ("Warmth", False), ("Clarity of the reasoning", False), ("Doesnt matter", False), ("Issues found", False),
])
def test_yes_no_criteria(text, yes_no):
    assert is_yes_no_check(text, 2048) is yes_no


def test_yes_no_check_reads_head_and_tail_only():
    pad = "x " * 10_000
    assert is_yes_no_check("Does it " + pad, 64)  # opens like a question
    assert is_yes_no_check(pad + " right?", 64)  # ends with a question mark
    assert is_yes_no_check(pad + " (true/false)", 64)
    assert not is_yes_no_check(pad + " yes or no " + pad, 64)  # the middle is not read


def test_bounded_scans_of_answers_outputs_reference():
    data = open_task(reference=" " * 5000 + "Paris")
    data["trajectories"][0]["output"] = "\n" * 5000 + "3 passed"
    data["trajectories"][1]["answer"] = "x " * 5000 + "\ndef f():\n    return 1"
    s = sig(data, scan_chars=1024)
    assert s.reference_chars == 5005  # lengths are still exact
    assert not s.has_reference and not s.has_execution_output and not s.has_code
    s = sig(data, scan_chars=20_000)
    assert s.has_reference and s.has_execution_output and s.has_code
