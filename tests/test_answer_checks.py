"""Answer checking as users expect it (issue 29): ``contains`` (the default), final-answer
extraction (``answer_pattern``, ``extract: final``), the last number of a sentence, and a reason
that always says what was compared. Each promise is an example from the issue and, where it fits,
a property over generated answers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oracle._evaluators import evaluator_factory
from oracle.config.model import OracleConfig
from oracle.errors import TaskValidationError
from oracle.strategies.protocol import EvaluationContext
from oracle.strategies.verifier.answer_text import normalize_text, words
from oracle.strategies.verifier.contains import ALTERNATIVE_CUES, NEGATION_CUES
from oracle.strategies.verifier.final_answer import final_answer
from oracle.strategies.verifier.reference import check_answer, validate_reference
from oracle.strategies.verifier.safe_regex import REGEX_TIMEOUT_S
from oracle.tasks.task import Task, Trajectory
from oracle.tasks.testspec import ReferenceCheck

ROOT = Path(__file__).resolve().parent.parent
CONTAINS = ReferenceCheck()


def verdict(answer: str, reference: str, check: ReferenceCheck = CONTAINS):
    return check_answer(answer, reference, check)


# -- contains: the examples -------------------------------------------------------------

def test_contains_is_the_default_mode():
    assert ReferenceCheck().mode == "contains" and ReferenceCheck().extract == "whole"


def test_a_sentence_holding_the_reference_passes_and_says_where():
    v = verdict("Pride and Prejudice was written by Jane Austen.", "Jane Austen")
    assert v.passed and v.message == "expected 'jane austen' (contains), found at 35"


@pytest.mark.parametrize("answer,reference,cue", [
    ("It was not Jane Austen", "Jane Austen", "'not'"),
    ("Austen, Brontë or Shelley", "Austen", "'or'"),
    ("It wasn't Jane Austen.", "Jane Austen", "\"wasn't\""),
    ("It wasn’t Jane Austen.", "Jane Austen", "'wasn’t'"),
    ("Jane Austen? No.", "Jane Austen", "'no'"),
    ("Never Jane Austen", "Jane Austen", "'never'"),
    ("Neither Jane Austen nor Brontë", "Jane Austen", "'neither'"),
    ("Maybe Jane Austen", "Jane Austen", "'maybe'"),
    ("Either Jane Austen or Brontë", "Jane Austen", "'either'"),
    ("Perhaps it's Jane Austen", "Jane Austen", "'perhaps'"),
    ("I cannot say whether it is Jane Austen", "Jane Austen", "'cannot'"),
    ("x ≠ 5", "5", "'≠'"),
    ("about 5", "5", "'about'"),
    ("more than 5", "5", "'than'"),
    ("at least 5 apples", "5", "'least'"),
    ("≥ 5", "5", "'≥'"),
    ("- 5", "5", "'-'"),
])
def test_negation_alternatives_and_bounds_outside_the_match_fail_and_name_the_cue(answer, reference, cue):
    v = verdict(answer, reference)
    assert not v.passed and cue in v.message, v.message


def test_the_why_of_a_cue_says_what_to_use_instead():
    v = verdict("It was not Jane Austen", "Jane Austen")
    assert v.message == ("expected 'jane austen' (contains) at 11, but the answer also says 'not': "
                         "a negation may apply; use answer_pattern or mode normalized")


@pytest.mark.parametrize("answer,reference", [
    ("He is not guilty.", "not guilty"),         # the cue is the reference's own
    ("The verdict: NOT GUILTY!", "Not guilty"),
    ("Jane Austen (1775-1817) wrote it.", "Jane Austen"),
    ("x = 5", "5"),                              # "=" is not a bound
    ("It is 3.5.", "3.5"),
    ("Austen, then Austen again", "Austen"),
    ("Paris", "Paris"),
])
def test_contains_matches(answer, reference):
    assert verdict(answer, reference).passed, verdict(answer, reference).message


@pytest.mark.parametrize("answer,reference", [
    ("-5", "5"), ("13.5", "3.5"), ("5,000", "5"), ("50%", "50"), ("x5", "5"), ("5.5", "5"), ("+5", "5"),
    ("−5", "5"), ("1/2", "1"), ("Jane Austens", "Jane Austen"), ("Austen-Leigh", "Austen"),
    ("Charlotte Brontë", "Jane Austen"), ("Jane Eyre by Austen", "Jane Austen")])
def test_contains_needs_whole_words_with_their_signs_and_digits(answer, reference):
    assert not verdict(answer, reference).passed


def test_a_cue_near_one_match_does_not_spoil_a_clean_other_match():
    # Every match but the last has a cue outside it; conservative: only a match with no cue
    # anywhere else passes, so a second clean mention does not rescue a negated first one.
    assert not verdict("Not Brontë. Jane Austen.", "Jane Austen").passed
    assert verdict("Jane Austen; Jane Austen.", "Jane Austen").passed


def test_a_reference_of_only_marks_matches_only_an_answer_of_only_marks():
    assert verdict("...", "?!").passed
    assert not verdict("Paris", "...").passed


def test_contains_is_linear_on_a_hostile_answer():
    answer = ("Austen " * 50_000) + ("not " * 50_000)
    start = time.perf_counter()
    v = verdict(answer, "Austen")
    assert not v.passed and "'not'" in v.message
    assert verdict("a" + "!" * 200_000, "a").passed  # a run of '!' is not quadratic any more
    assert time.perf_counter() - start < 3.0


# -- contains: properties -------------------------------------------------------------------------

WORDS = ["jane", "austen", "Paris", "5", "-5", "3.5", "13.5", "1,000", "x", "=", "it", "was", "by", "the",
         "(5)", "5.", "Brontë", "«Paris»", "ß", "STRASSE", "n", "t"]
_answer = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
_any_text = st.text(st.sampled_from("ab5-.,!? \n()'’tnoNOT"), max_size=24)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_answer, _any_text, st.text(max_size=20)))
def test_an_answer_equal_to_the_reference_always_passes(text):
    for mode in ("contains", "normalized", "exact", "set"):
        assert check_answer(text, text, ReferenceCheck(mode=mode)).passed, (mode, text)
    if validate_reference(text, ReferenceCheck(mode="numeric")) is None:  # the reference holds a number
        assert check_answer(text, text, ReferenceCheck(mode="numeric")).passed, text


CUES = ["not", "or", "maybe", "isn't", "about", "than", "≥", "-", "nor"]
_mixed = st.lists(st.sampled_from(WORDS + CUES), max_size=10).map(" ".join)


def _spec(answer: str, reference: str) -> bool:
    """The contains rule, brute force: some occurrence of the reference's words with no cue word
    outside it (bound words and signs only for a numeric reference, a lone sign right before)."""
    want, got = normalize_text(reference).split(" "), normalize_text(answer).split(" ")
    numeric = any(ch.isdigit() for ch in reference)

    def cue(word: str) -> bool:
        return (word in NEGATION_CUES or word.endswith(("n't", "n’t")) or word in ALTERNATIVE_CUES
                or (numeric and word in {"about", "than", "≥"}))

    for i in range(len(got) - len(want) + 1):
        if got[i:i + len(want)] != want or (numeric and i > 0 and got[i - 1] == "-"):
            continue
        if not any(cue(w) for j, w in enumerate(got) if j < i or j >= i + len(want)):
            return True
    return False


@settings(max_examples=500, deadline=None)
@given(_mixed, st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join))
def test_contains_agrees_with_the_rule_written_out(answer, reference):
    v = verdict(answer, reference)
    assert v.passed is _spec(answer, reference), (answer, reference, v.message)
    assert v.message.startswith(f"expected {normalize_text(reference)!r} (contains)")


@settings(max_examples=300, deadline=None)
@given(_answer, _answer, st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,3})?", fullmatch=True),
       st.sampled_from(["-", "+", "−", "1", "0", ".5", "5.", ",000", "%", "²"]), st.booleans())
def test_contains_never_matches_when_a_sign_or_digit_differs(before, after, number, edit, in_front):
    assume(number not in before.split() + after.split())
    changed = (edit + number) if in_front else (number + edit)
    assume(normalize_text(changed) != normalize_text(number))  # "5." is 5: not an edit of value
    answer = f"{before} {changed} {after}"
    assume(normalize_text(number) not in normalize_text(f"{before} {after}").split(" "))
    assert not verdict(answer, number).passed, (answer, number)


@settings(max_examples=300, deadline=None)
@given(_answer, _answer, st.sampled_from(sorted(NEGATION_CUES | ALTERNATIVE_CUES)))
def test_a_cue_outside_the_match_always_fails(before, after, cue):
    answer = f"{before} {cue} {after} Jane Austen"
    v = verdict(answer, "Jane Austen")
    assert not v.passed and repr(cue) in v.message, (answer, v.message)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_words_read_the_text_as_normalize_text_does_and_know_where_each_core_is(text):
    found = words(text)
    assert " ".join(w.core for w in found) == normalize_text(text)
    for w in found:
        assert normalize_text(text[w.at:]).split(" ")[0] == w.core


# -- final-answer extraction ----------------------------------------------------------------------

@pytest.mark.parametrize("reply,answer,source", [
    ("Let me think. 6*7 is...\n$\\boxed{42}$", "42", "\\boxed{}"),
    ("\\boxed{1} at first, then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}", "\\boxed{}"),
    ("So \\boxed{\\text{Jane Austen}}.", "Jane Austen", "\\boxed{}"),
    ("\\boxed{a \\} b}", "a \\} b", "\\boxed{}"),
    ("\\boxed{7} and a broken \\boxed{8", "7", "\\boxed{}"),
    ("Reasoning.\nThe answer is **Jane Austen**.", "Jane Austen", "'the answer is'"),
    ("Step 1...\nFinal answer: 17\nThanks!", "17", "'the answer is'"),
    ("Final Answer:\n  9\n", "9", "'the answer is'"),
    ("answer: first\nanswer: second", "second", "'the answer is'"),
    ("Thinking...\n\nParis\n\n", "Paris", "last line"),
])
def test_final_answer_extraction(reply, answer, source):
    got = final_answer(reply)
    assert (got.text, got.source) == (answer, source)


@pytest.mark.parametrize("reply,problem", [("", "the reply is empty"), ("  \n\t", "the reply is empty"),
                                           ("So \\boxed{}", "is empty")])
def test_extraction_that_finds_nothing_fails_with_the_reason(reply, problem):
    v = verdict(reply, "42", ReferenceCheck(extract="final"))
    assert not v.passed and problem in v.message


def test_the_why_names_the_extracted_answer_and_its_source():
    v = verdict("It is 6*7, so $\\boxed{42}$", "42", ReferenceCheck(mode="numeric", extract="final"))
    assert v.passed and v.message == ("final answer '42' (from \\boxed{}); 42 within tolerance of 42 "
                                      "(rel 1e-06, abs 1e-09)")


def test_final_extraction_is_what_is_compared():
    # The last line says Brontë: mentioning Austen earlier does not pass.
    check = ReferenceCheck(extract="final")
    assert not verdict("Austen is often guessed.\nBrontë", "Austen", check).passed
    assert verdict("Many guess Brontë or Shelley.\nThe answer is Austen.", "Austen", check).passed
    assert not verdict("Many guess Brontë or Shelley; it is Austen.", "Austen").passed  # whole reply: 'or'


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_characters="\\{}", blacklist_categories=("Cs",)), max_size=30),
       st.from_regex(r"-?[0-9]{1,6}", fullmatch=True), st.text(" .\n", max_size=3))
def test_the_last_box_is_the_answer(prefix, number, tail):
    reply = f"{prefix} \\boxed{{{number}}}{tail}"
    assert final_answer(reply).text == number
    assert verdict(reply, number, ReferenceCheck(mode="numeric", extract="final", abs_tol=0, rel_tol=0)).passed


@pytest.mark.parametrize("pattern,reply,expected,ok", [
    (r"ANSWER:\s*(?P<answer>\w+)", "ANSWER: Lyon\nwait, no.\nANSWER: Paris", "Paris", True),   # last match
    (r"#### (\S+)", "work...\n#### 42", "42", True),                                              # group 1
    (r"\d+", "first 7 then 42", "42", True),                                                      # whole match
    (r"ANSWER:\s*(?P<answer>\w+)", "ANSWER: Lyon", "Paris", False),
])
def test_answer_pattern_takes_the_last_match(pattern, reply, expected, ok):
    v = verdict(reply, expected, ReferenceCheck(answer_pattern=pattern))
    assert v.passed is ok and v.message.startswith("final answer"), v.message


def test_answer_pattern_that_does_not_match_fails_with_the_reason():
    v = verdict("Paris", "Paris", ReferenceCheck(answer_pattern=r"ANSWER: (\w+)"))
    assert not v.passed and "does not match the answer" in v.message
    v = verdict("b", "b", ReferenceCheck(answer_pattern=r"(a)|b"))
    assert not v.passed and "took no part" in v.message


@pytest.mark.slow
def test_answer_pattern_with_a_backreference_runs_bounded_in_a_child():
    check = ReferenceCheck(answer_pattern=r"(\w+) is \1: (?P<answer>\w+)")
    assert verdict("x is x: Paris", "Paris", check).passed  # RE2 lacks backreferences: the fallback ran
    hostile = ReferenceCheck(answer_pattern=r"(a|aa)+\1b")
    start = time.perf_counter()
    v = verdict("a" * 40 + "c", "a", hostile)
    assert not v.passed and "took longer than" in v.message
    assert time.perf_counter() - start < REGEX_TIMEOUT_S + 5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=6),
       st.text(st.sampled_from("abc .\n"), max_size=10))
def test_answer_pattern_reads_the_last_marked_number(numbers, filler):
    reply = filler.join(f"ANSWER: {n}" for n in numbers)
    check = ReferenceCheck(mode="numeric", answer_pattern=r"ANSWER: (\d+)", abs_tol=0, rel_tol=0)
    assert verdict(reply, str(numbers[-1]), check).passed


# -- numbers in a sentence -----------------------------------------------------------------------

def test_the_last_number_of_a_sentence():
    last = ReferenceCheck(mode="numeric", number="last")
    assert verdict("In 2023 we sold 42", "42", last).passed
    assert not verdict("In 2023 we sold 42", "42", ReferenceCheck(mode="numeric")).passed
    assert verdict("In 2023 we sold 42", "2023", ReferenceCheck(mode="numeric")).passed
    v = verdict("We sold 42 in 10²", "42", last)  # a refused last number is not replaced by an earlier one
    assert not v.passed and "runs on" in v.message


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-10**6, max_value=10**6), min_size=1, max_size=6))
def test_first_and_last_read_the_first_and_last_numbers(numbers):
    text = " and then ".join(str(n) for n in numbers)
    exact = {"abs_tol": 0, "rel_tol": 0}
    assert verdict(text, str(numbers[0]), ReferenceCheck(mode="numeric", **exact)).passed
    assert verdict(text, str(numbers[-1]), ReferenceCheck(mode="numeric", number="last", **exact)).passed


# -- every mode says what was compared ------------------------------------------------------------

@pytest.mark.parametrize("mode,answer,reference,message", [
    ("normalized", "Paris.", "paris", "expected 'paris' (normalized), got 'paris'"),
    ("exact", "Paris", "Paris", "expected 'Paris' (exact), got 'Paris'"),
    ("regex", "2024", r"\d{4}", r"'2024' matches /\d{4}/"),
    ("set", "b, a", "a,b", "same 2 items: ['a', 'b']"),
    ("numeric", "about 3.0", "3", "3 within tolerance of 3 (rel 1e-06, abs 1e-09)"),
])
def test_a_passing_verdict_says_what_was_compared(mode, answer, reference, message):
    v = verdict(answer, reference, ReferenceCheck(mode=mode))
    assert v.passed and v.message == message


# -- the task file's fields ------------------------------------------------------------------------

@pytest.mark.parametrize("check,field", [
    ({"answer_pattern": "(unclosed"}, "task.reference_check.answer_pattern"),
    ({"answer_pattern": "x", "extract": "final"}, "task.reference_check.extract"),
    ({"number": "last"}, "task.reference_check.number"),
    ({"extract": "first"}, "task.reference_check.extract"),
    ({"mode": "includes"}, "task.reference_check.mode"),
])
def test_bad_reference_check_fields_are_named(check, field):
    with pytest.raises(TaskValidationError) as err:
        Task(id="t", prompt="q", reference="5", reference_check=check)
    assert field in str(err.value)


# -- end to end: the verifier and the CLI ---------------------------------------------------------

PP = {"task": {"id": "pp", "prompt": "Who wrote Pride and Prejudice?", "reference": "Jane Austen"},
      "trajectories": [{"id": "a", "answer": "Pride and Prejudice was written by Jane Austen."},
                       {"id": "b", "answer": "Charlotte Brontë"},
                       {"id": "c", "answer": "It was not Jane Austen"},
                       {"id": "d", "answer": "Austen, Brontë or Shelley"}]}


async def test_the_verifier_checks_each_candidate_against_the_key():
    task = Task(**PP["task"])
    ctx = EvaluationContext(task=task, trajectories=[Trajectory(**t) for t in PP["trajectories"]],
                            config=OracleConfig())
    result = await evaluator_factory("verifier")().evaluate(ctx)
    assert [c.passed for c in result.candidates] == [True, False, False, False]
    assert result.best == ["a"] and result.details["reference_check"]["mode"] == "contains"
    assert all(c.details["message"].startswith("expected 'jane austen' (contains)") for c in result.candidates)


def test_the_text_output_says_why_for_every_candidate(tmp_path):
    path = tmp_path / "pp.json"
    path.write_text(json.dumps(PP))
    out = subprocess.run([sys.executable, "-m", "oracle", "evaluate", str(path)], capture_output=True, check=False,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "-> verifier" in out.stdout
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line[:2] in ("a ", "b ", "c ", "d ")}
    assert "PASS" in rows["a"] and "expected 'jane austen' (contains), found at 35" in rows["a"]
    assert "not in 'charlotte brontë'" in rows["b"]
    assert "also says 'not'" in rows["c"]
    assert all("FAIL" in rows[k] for k in "bcd")
