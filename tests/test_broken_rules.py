"""broken.py's rules on outcomes (pure): which tests are broken, what a skip means, and that no
candidate's own run can get a test excluded. Suites are checked on their cases (harness.flatten)."""

from __future__ import annotations

import dataclasses

import pytest

from oracle.strategies.verifier import scoring
from oracle.strategies.verifier.broken import decide
from oracle.strategies.verifier.harness import TestOutcome as Outcome


def out(outcome: str, name: str = "t", message: str = "", **extra) -> Outcome:
    return Outcome(name, extra.pop("kind", "assert"), outcome, message or outcome, 1.0, extra.pop("weight", 1.0),
                       **extra)


def suite(*cases: Outcome, name: str = "pytest[0]") -> Outcome:
    return Outcome(name, "pytest", "pass", "suite", 1.0, 1.0, cases=tuple(cases))


def case(outcome: str, node: str, message: str = "") -> Outcome:
    return out(outcome, name=f"pytest[0]::{node}", message=message, kind="pytest", node_id=f"test_x.py::{node}")


def words(decision, cid: str) -> list[str]:
    return [o.outcome for o in decision.flat(cid)]


def test_broken_in_every_run_is_reported_once_and_scored_for_nobody():
    runs = {c: {0: out("broken", message="the test does not compile"), 1: out("pass", "u")} for c in ("a", "b")}
    decision = decide(runs)
    assert [(b.test, b.reason) for b in decision.broken] == [("t", "the test does not compile")]
    assert words(decision, "a") == ["broken", "pass"]
    assert scoring.score_tests(decision.flat("a")) == (1.0, True)


def test_broken_in_only_some_runs_is_an_error_for_those():
    runs = {"a": {0: out("broken", message="raised before any candidate code ran")}, "b": {0: out("pass")}}
    decision = decide(runs)
    assert decision.broken == []
    assert words(decision, "a") == ["error"] and "only" in decision.flat("a")[0].message
    assert scoring.score_tests(decision.flat("a")) == (0.0, False)


@pytest.mark.parametrize("silent", [
    out("error", message="the candidate failed to load", before_test=True),
    out("timeout"),
    out("error", message="starved", our_fault=True),
])
def test_runs_that_never_reached_the_test_do_not_unbreak_it(silent):
    decision = decide({"a": {0: out("broken", message="no module named x")}, "b": {0: silent}})
    assert [b.reason for b in decision.broken] == ["no module named x"]
    kept = silent.our_fault
    assert words(decision, "b") == [silent.outcome if kept else "broken"]


def test_a_run_that_got_past_the_break_keeps_it_counting_for_everyone():
    # One candidate's run failing (not broken) means the test ran there: the others' broken is theirs.
    decision = decide({"a": {0: out("broken")}, "b": {0: out("fail")}, "c": {0: out("broken")}})
    assert decision.broken == [] and words(decision, "a") == ["error"] and words(decision, "c") == ["error"]


def test_failing_on_the_reference_solution_is_broken_for_everyone():
    runs = {"a": {0: out("pass")}, "b": {0: out("fail")}}
    decision = decide(runs, {0: out("fail", message="expected 3, got 4")})
    assert [b.reason for b in decision.broken] == ["fails on the reference solution: expected 3, got 4"]
    assert words(decision, "a") == words(decision, "b") == ["broken"]
    erroring = decide(runs, {0: out("error", message="NameError")})
    assert erroring.broken[0].reason.startswith("errors on the reference solution")


def test_a_reference_that_passes_keeps_a_skip_from_counting_as_a_pass():
    decision = decide({"a": {0: out("skipped")}, "b": {0: out("pass")}}, {0: out("pass")})
    assert decision.broken == [] and words(decision, "a") == ["skipped"]
    assert scoring.score_tests(decision.flat("a")) == (0.0, False)


def test_a_skip_the_reference_shows_too_is_neutral():
    runs = {"a": {0: out("skipped", "s"), 1: out("pass", "u")}, "b": {0: out("fail", "s"), 1: out("pass", "u")}}
    decision = decide(runs, {0: out("skipped", "s"), 1: out("pass", "u")})
    assert decision.flat("a")[0].neutral and decision.flat("a")[0].as_dict()["neutral"] is True
    assert scoring.score_tests(decision.flat("a")) == (1.0, True)
    assert scoring.score_tests(decision.flat("b")) == (0.5, False)  # it ran and failed: counts


def test_an_xfail_is_neutral_only_when_the_reference_xfails_too():
    assert decide({"a": {0: out("xfailed")}}, {0: out("xfailed")}).flat("a")[0].neutral
    decision = decide({"a": {0: out("xfailed")}, "b": {0: out("pass")}}, {0: out("skipped")})
    assert not decision.flat("a")[0].neutral
    assert scoring.score_tests(decision.flat("a")) == (0.0, False)
    assert scoring.score_tests(decision.flat("b")) == (1.0, True)  # xpassed/pass count


def test_skipped_for_every_candidate_without_a_reference_was_not_run():
    decision = decide({"a": {0: out("skipped", message="needs linux")}, "b": {0: out("skipped")}})
    [b] = decision.broken
    assert b.reason.startswith("was not run: skipped for every candidate") and "needs linux" in b.reason
    mixed = decide({"a": {0: out("skipped")}, "b": {0: out("pass")}})
    assert mixed.broken == [] and scoring.score_tests(mixed.flat("a")) == (0.0, False)


def test_a_reference_without_a_verdict_says_nothing():
    for silent in (out("timeout"), out("error", our_fault=True)):
        decision = decide({"a": {0: out("pass")}}, {0: silent})
        assert decision.broken == [] and words(decision, "a") == ["pass"]


def test_every_unit_broken():
    decision = decide({"a": {0: out("broken", "x"), 1: out("broken", "y")}})
    assert decision.all_broken and decision.units == 2
    assert scoring.score_tests(decision.flat("a")) == (None, None)


def test_tampering_and_our_faults_keep_their_outcome():
    tampered = out("error", message="tampering", tampering=("nice",))
    decision = decide({"a": {0: out("broken")}, "b": {0: tampered}})
    assert [b.test for b in decision.broken] == ["t"] and decision.flat("b") == [tampered]


# -- suites: the units are the cases ----------------------------------------------------------------

def test_suite_cases_are_units_and_a_whole_run_stands_for_every_case():
    good = suite(case("pass", "test_a"), case("fail", "test_b"))
    whole = dataclasses.replace(out("error", "pytest[0]", message="the candidate failed to load", kind="pytest",
                                    before_test=True))
    decision = decide({"a": {0: good}, "b": {0: whole}})
    assert [o.name for o in decision.flat("b")] == ["pytest[0]::test_a", "pytest[0]::test_b"]
    assert words(decision, "b") == ["error", "error"] and decision.broken == []
    assert [o.node_id for o in decision.flat("b")] == ["test_x.py::test_a", "test_x.py::test_b"]


def test_a_case_broken_for_everyone_is_broken_alone():
    decision = decide({c: {0: suite(case("pass", "test_a"), case("broken", "test_b", "fixture failed"))}
                       for c in ("a", "b")})
    assert [(b.test, b.reason) for b in decision.broken] == [("pytest[0]::test_b", "fixture failed")]
    assert scoring.score_tests(decision.flat("a")) == (1.0, True)


def test_a_case_missing_from_one_run_is_never_a_pass_for_it():
    decision = decide({"a": {0: suite(case("pass", "test_a"), case("pass", "test_b"))},
                       "b": {0: suite(case("pass", "test_a"))}})
    assert words(decision, "b") == ["pass", "error"]
    assert "not run in this candidate's run" in decision.flat("b")[1].message


def test_a_case_failing_on_the_reference_is_broken_and_keyed_by_node_id():
    ref = {0: suite(case("pass", "test_a"), case("fail", "test_b", "assert 1 == 2"))}
    decision = decide({"a": {0: suite(case("pass", "test_a"), case("pass", "test_b"))}}, ref)
    assert [b.test for b in decision.broken] == ["pytest[0]::test_b"]
    assert words(decision, "a") == ["pass", "broken"]


def test_a_reference_whole_run_skip_covers_the_cases():
    ref = {0: out("skipped", "pytest[0]", kind="pytest")}
    decision = decide({"a": {0: suite(case("skipped", "test_a"))}}, ref)
    assert decision.flat("a")[0].neutral


def test_a_broken_found_after_the_candidate_could_steer_it_is_undecided_however_many_agree():
    """A value the test could not hand the candidate, after the candidate could have chosen that
    path: no number of agreeing runs shows the test at fault (several candidates of one author agree),
    so each is undecided (unscored: never passed, never a 0) and the unit is listed with what would
    decide it; a run that got past it makes the others' the candidates' errors; the reference decides;
    one found before the candidate could steer is broken on its own."""
    after = out("broken", message="broken by the test, not the candidate: a lock", after_answers=True)
    for runs in ({"cheat": {0: after, 1: out("pass", "u")}},
                 {"a": {0: after, 1: out("pass", "u")}, "b": {0: after, 1: out("pass", "u")}},
                 {"a": {0: after, 1: out("pass", "u")}, "slow": {0: out("timeout"), 1: out("pass", "u")}}):
        decision = decide(runs)
        assert [b.reason.startswith("undecided: ") for b in decision.broken] == [True]
        first = next(iter(runs))
        assert words(decision, first) == ["error", "pass"] and decision.flat(first)[0].undecided
        assert scoring.score_tests(decision.flat(first)) == (None, None)  # unscored, not 0.5, not a pass
    past = decide({"cheat": {0: after}, "honest": {0: out("pass")}})
    assert past.broken == [] and words(past, "cheat") == ["error"] and not past.flat("cheat")[0].undecided
    assert scoring.score_tests(past.flat("cheat")) == (0.0, False)
    on_reference = decide({"a": {0: after}}, reference={0: out("broken", message="a lock")})
    assert len(on_reference.broken) == 1 and words(on_reference, "a") == ["broken"]
    valid_on_reference = decide({"a": {0: after}}, reference={0: out("pass")})
    assert valid_on_reference.broken == [] and words(valid_on_reference, "a") == ["error"]
    before = decide({"a": {0: out("broken", message="broken by the test, not the candidate: a lock")}})
    assert len(before.broken) == 1 and words(before, "a") == ["broken"]
    mixed = decide({"a": {0: after}, "b": {0: out("broken", message="a lock")}})  # one run shows it: broken
    assert len(mixed.broken) == 1 and words(mixed, "a") == ["broken"]
    in_suite = decide({"a": {0: suite(case("broken", "test_a", "a lock"), case("pass", "test_b"))}})
    assert len(in_suite.broken) == 1  # a case without the flag: broken on its own
    flagged = dataclasses.replace(case("broken", "test_a", "a lock"), after_answers=True)
    lone_case = decide({"a": {0: suite(flagged, case("pass", "test_b"))}})
    assert [b.reason.startswith("undecided: ") for b in lone_case.broken] == [True]
    assert words(lone_case, "a") == ["error", "pass"] and scoring.score_tests(lone_case.flat("a")) == (None, None)
