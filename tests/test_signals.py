"""Every signal: what it reads and its range."""

from __future__ import annotations

from oracle.signals import extract
from oracle.task_file import parse_task
from tests.data.tasks import code_task, open_task, question_task


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


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from oracle.text_cues import (CODE_HINTS, CODE_LINE, GRADED_HINTS, GRADED_SCALE, RATIONALE,  # noqa: E402
                              RATIONALE_HINTS, asks_graded_scale, asks_rationale, has_code_line,
                              search_near)

_WORDS = ("rate it on a scale of 1 to 10 points 3-5 stars 7to9 scale explain why justify the reasoning behind give reasons "
          "with an explanation show your work def return class import from out of 5 stars grade likert "
          "foo bar").split() + ["\n", "  ", "\t"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=60))
def test_windowed_search_finds_what_a_full_scan_finds(words):
    text = " ".join(words)
    for pattern, hints in ((GRADED_SCALE, GRADED_HINTS), (RATIONALE, RATIONALE_HINTS), (CODE_LINE, CODE_HINTS)):
        assert search_near(pattern, text, hints) == (pattern.search(text) is not None)
    assert has_code_line(text) == (CODE_LINE.search(text) is not None)
    assert asks_graded_scale(text) == (GRADED_SCALE.search(text) is not None)
    assert asks_rationale(text) == (RATIONALE.search(text) is not None)
