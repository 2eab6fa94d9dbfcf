"""Reference checks never make two answers with different values equal.

``normalized`` may ignore case, whitespace and valueless marks at word edges, nothing else (a
property over generated pairs: equal normal forms imply equal value skeletons, and one edit of a
sign, operator, digit or decimal point always changes the form). ``numeric`` reads every minus
and digit form on purpose or refuses the number with a reason; unbounded numbers fail cleanly.
``exact``, ``regex`` (RE2 and the bounded fallback) and ``set`` are checked for the same merges.
"""

from __future__ import annotations

import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.strategies.verifier.reference import (MINUS_SIGNS, check_answer, is_valueless_mark, normalize_text,
                                                  read_number, validate_reference)
from oracle.tasks.testspec import ReferenceCheck
from tests.profiles import examples

NORMALIZED, NUMERIC = ReferenceCheck(mode="normalized"), ReferenceCheck(mode="numeric", abs_tol=0, rel_tol=1e-9)


def passes(answer: str, reference: str, check: ReferenceCheck) -> bool:
    return check_answer(answer, reference, check).passed


# -- normalized ------------------------------------------------------------------------------------

@pytest.mark.parametrize("a,b", [
    ("-5", "5"), ("2+3", "2 3"), ("2-3", "2 3"), ("a+b", "a-b"), ("\u22123", "3"), ("3.5", "3 5"), ("3.5", "35"),
    (".5", "5"), ("1,000", "1 000"), ("5!", "5"), ("50%", "50"), ("$5", "5"), ("x²", "x2"), ("1/2", "1 2"),
    ("(2+3)*4", "2+3*4"), ("-(2+3)", "-2+3"), ("±1", "1"), ("x=1", "x 1"), ("10^3", "10 3"), ("3:45", "3 45"),
    ("\uff15", "5"), ("\u0663", "3"), ("A-17", "a 17")])
def test_normalized_keeps_signs_operators_and_digits_apart(a, b):
    assert normalize_text(a) != normalize_text(b)
    assert not passes(a, b, NORMALIZED) and not passes(b, a, NORMALIZED)


@pytest.mark.parametrize("a,b", [
    ("Paris.", "paris"), ("  Hello,   World! ", "hello world"), ("(42)", "42"), ('"yes"', "yes"), ("5.", "5"),
    ("«Paris»", "PARIS"), ("(-5)", "-5"), ("The Eiffel Tower!", "the eiffel\ttower"), ("Straße", "STRASSE")])
def test_normalized_still_ignores_case_whitespace_and_edge_marks(a, b):
    assert passes(a, b, NORMALIZED)


def skeleton(text: str) -> list[str]:
    """The value characters of a text, in order: everything but whitespace and valueless marks."""
    return [ch for ch in text.casefold() if not ch.isspace() and not is_valueless_mark(ch)]


VALUE_CHARS = "0123456789" + "".join(MINUS_SIGNS) + "+*/^=<>%$€±×÷·²½\uff15\u0663\u0966aAbZé"
MARKS = ".,;:!?\"'()[]{}«»“”‘’…。"
_text = st.text(st.sampled_from(VALUE_CHARS + MARKS + " \t\n\u00a0"), max_size=14)


@settings(max_examples=examples(400), deadline=None)
@given(_text, _text)
def test_equal_normal_forms_mean_the_same_value_characters(a, b):
    """The docstring's promise: forms agree only when the texts differ in case, whitespace and marks."""
    if normalize_text(a) == normalize_text(b):
        assert skeleton(a) == skeleton(b), (a, b)


@settings(max_examples=examples(400), deadline=None)
@given(_text, st.integers(min_value=0), st.sampled_from(VALUE_CHARS), st.sampled_from(["insert", "replace", "delete"]))
def test_one_edit_of_a_value_character_changes_the_form(a, at, value, edit):
    at = at % (len(a) + 1)
    if edit == "insert":
        b = a[:at] + value + a[at:]
    elif at < len(a) and not a[at].isspace() and not is_valueless_mark(a[at]):
        b = a[:at] + (value if edit == "replace" else "") + a[at + 1:]
    else:
        return
    if skeleton(a) != skeleton(b):
        assert normalize_text(a) != normalize_text(b), (a, b)


@settings(max_examples=examples(200), deadline=None)
@given(st.text("0123456789", min_size=1, max_size=6), st.text("0123456789", min_size=1, max_size=6))
def test_a_decimal_point_between_digits_is_never_dropped(left, right):
    assert normalize_text(f"{left}.{right}") not in (normalize_text(left + right), normalize_text(f"{left} {right}"))


def test_set_mode_items_keep_their_signs():
    check = ReferenceCheck(mode="set")
    assert not passes("-5, 3", "5, 3", check)
    assert not passes("2+3, x", "2 3, x", check)
    assert passes("Red., (green)", "red, green", check)


# -- numeric ---------------------------------------------------------------------------------------

MINUS_FORMS = ["-", "\u2212", "\u2012", "\u2013", "\u2010", "\u2011", "\ufe63", "\uff0d", "\u2796", "\u02d7"]
REFUSED_SIGNS = ["\u2014", "\u2015", "\u207b", "\u208b", "\u301c", "\u2e3a", "\u30a0", "\u05be"]


@pytest.mark.parametrize("minus", MINUS_FORMS)
def test_every_minus_form_is_read_as_minus(minus):
    assert read_number(f"x = {minus}3").value == -3.0
    assert not passes(f"{minus}3", "3", NUMERIC) and passes(f"{minus}3", "-3", NUMERIC)
    assert read_number(f"1e{minus}3").value == 0.001


@pytest.mark.parametrize("sign", REFUSED_SIGNS)
def test_other_dashes_and_minus_like_signs_are_refused(sign):
    got = read_number(f"{sign}3")
    assert got.value is None and "not read as a sign" in got.problem
    verdict = check_answer(f"{sign}3", "3", NUMERIC)
    assert not verdict.passed and "not read as a sign" in verdict.message
    assert not passes(f"{sign}3", "-3", NUMERIC)


def test_every_script_of_digits_is_understood_alone_and_refused_mixed():
    for ch in (chr(c) for c in range(0x110000)):
        if unicodedata.category(ch) == "Nd" and unicodedata.decimal(ch) == 7:
            zero = chr(ord(ch) - 7)
            assert read_number(f"{ch}{zero}").value == 70.0, hex(ord(ch))
            assert read_number(f"{unicodedata.lookup('MINUS SIGN')}{ch}").value == -7.0
            if ch != "7":
                mixed = read_number(f"{ch}7")
                assert mixed.value is None and "mix scripts" in mixed.problem, hex(ord(ch))


@pytest.mark.parametrize("answer,reference", [
    ("10²", "10"), ("1½", "1"), ("10⁻³", "10"), ("1,5", "1"), ("1.2.3", "1.2"), ("2+3", "2"), ("1/2", "1"),
    ("10^3", "10"), ("2**3", "2"), ("3:4", "3"), ("0x1F", "0"), ("--5", "-5"), ("1e999", "1e400"), ("1.000,5", "1"),
    ("٣3", "33")])
def test_numbers_that_would_be_read_as_another_value_are_refused(answer, reference):
    got = read_number(answer)
    assert got.value is None and got.problem, answer
    verdict = check_answer(answer, reference, ReferenceCheck(mode="numeric", rel_tol=0.5, abs_tol=1e6))
    assert not verdict.passed and verdict.message == got.problem


@pytest.mark.parametrize("text,value", [
    ("It is about 3.1416.", 3.1416), ("1,000", 1000.0), ("12,345.6", 12345.6), ("-.5", -0.5), ("5.", 5.0),
    ("+7", 7.0), ("x5", 5.0), ("\uff13.\uff15", 3.5), ("2 + 3", 2.0), ("1e5 m", 1e5), ("1, 2, 3", 1.0)])
def test_plain_numbers_still_read(text, value):
    assert read_number(text).value == value


def test_unbounded_numbers_fail_cleanly_and_fast():
    start = time.perf_counter()
    for huge in ("9" * 1_000_000, "-" + "1" * 5000, "0." + "0" * 999_999 + "1", "1e" + "9" * 100_000, "1" * 400):
        verdict = check_answer(huge, "5", NUMERIC)
        assert verdict.passed is False and verdict.message
        assert validate_reference(huge, NUMERIC) is not None or read_number(huge).value is not None
    assert time.perf_counter() - start < 2.0
    assert "task.reference" in validate_reference("9" * 5000, NUMERIC)
    assert "task.reference" in validate_reference("\u2014" + "4", NUMERIC)


# -- exact and regex ------------------------------------------------------------------------------

def test_exact_compares_characters():
    check = ReferenceCheck(mode="exact")
    assert passes(" -5\n", "-5", check)
    for a, b in (("-5", "5"), ("\u22125", "-5"), ("\uff15", "5"), ("5\u200b", "5"), ("Paris", "paris")):
        assert not passes(a, b, check)


def test_regex_digits_mean_ascii_digits_on_both_paths():
    check = ReferenceCheck(mode="regex")
    assert passes("42", r"\d+", check) and not passes("\u0664\u0662", r"\d+", check)          # RE2
    assert passes("4242", r"(\d+)\1", check) and not passes("\u0664\u0664", r"(\d)\1", check)  # fallback
    assert not passes("\u22125", r"-5", check) and not passes("5", r"-5", check)


def test_regex_with_a_lone_surrogate_is_answered_not_raised():
    check = ReferenceCheck(mode="regex")
    assert passes("a\ud800c", "a.c", check) is True
    assert passes("a\ud800c", "abc", check) is False
