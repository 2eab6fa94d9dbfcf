"""A candidate's change read from its trajectory (oracle/tasks/patch_text.py): the patch field, the
files field, a fenced diff in the answer, a bare diff answer, or nothing; an empty patch is none."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.tasks.patch_text import CandidateChange, candidate_change, looks_like_diff, patch_from_answer
from oracle.tasks.task import Trajectory
from tests.profiles import examples

DIFF = ("diff --git a/pager.py b/pager.py\n"
        "--- a/pager.py\n"
        "+++ b/pager.py\n"
        "@@ -1,2 +1,2 @@\n"
        " def last(n, size):\n"
        "-    return n // size\n"
        "+    return (n + size - 1) // size\n")
PLAIN_DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
MARKDOWN_DIFF = ("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n"
                 " ```\n-old\n+new\n ```\n")
"""A diff of a Markdown file: its context lines hold fences, which must not close the answer's block."""


def change(**fields) -> CandidateChange:
    return candidate_change(Trajectory(id="c", **fields))


def test_the_patch_field_is_taken_byte_for_byte_before_anything_else():
    odd = "diff --git a/x b/x\r\nno final newline"
    got = change(patch=odd, answer=f"```diff\n{DIFF}```\n")
    assert got == CandidateChange(kind="patch", patch=odd, source="patch")


def test_files_are_taken_when_there_is_no_patch():
    got = change(files={"pager.py": "def last(n, size):\n    return -(-n // size)\n"}, answer=f"```diff\n{DIFF}```")
    assert got.kind == "files" and got.source == "files" and got.patch == ""
    assert got.files == {"pager.py": "def last(n, size):\n    return -(-n // size)\n"}


@pytest.mark.parametrize("fields, source", [
    ({"patch": ""}, "patch"), ({"patch": " \n\t\n"}, "patch"), ({"files": {}}, "files"),
    ({"answer": "I could not find the bug."}, "none"), ({"answer": ""}, "none"),
    ({"answer": "Here:\n```diff\n\n```\n"}, "answer"),
])
def test_a_change_of_nothing_is_kind_none(fields, source):
    assert change(**fields) == CandidateChange(kind="none", source=source)


def test_a_fenced_diff_in_the_answer_is_the_patch():
    for tag in ("diff", "patch", "DIFF", "diff title=fix"):
        got = change(answer=f"The fix:\n\n```{tag}\n{DIFF}```\n\nThis rounds up.")
        assert got == CandidateChange(kind="patch", patch=DIFF, source="answer"), tag
    assert change(answer=f"~~~diff\n{DIFF}~~~\n").patch == DIFF


def test_several_diff_blocks_are_one_patch_in_order_and_other_blocks_are_ignored():
    answer = f"First:\n```diff\n{DIFF}```\nA demo:\n```python\nprint(1)\n```\nSecond:\n```patch\n{PLAIN_DIFF}```"
    assert change(answer=answer).patch == DIFF + PLAIN_DIFF


def test_an_untagged_block_counts_only_when_it_holds_a_diff_and_none_is_tagged():
    assert change(answer=f"```\n{DIFF}```").patch == DIFF
    assert change(answer="```\nprint('no diff')\n```").kind == "none"
    assert change(answer=f"```\n{PLAIN_DIFF}```\n```diff\n{DIFF}```").patch == DIFF


def test_a_context_line_holding_a_fence_does_not_close_the_block():
    got = change(answer=f"```diff\n{MARKDOWN_DIFF}```\ndone")
    assert got.patch == MARKDOWN_DIFF
    assert change(answer=MARKDOWN_DIFF).patch == MARKDOWN_DIFF  # a bare diff with fences in it


def test_a_bare_diff_answer_is_the_patch():
    assert change(answer=DIFF) == CandidateChange(kind="patch", patch=DIFF, source="answer")
    assert change(answer="\n\n" + PLAIN_DIFF.rstrip("\n")).patch == PLAIN_DIFF  # a final newline is added
    assert change(answer="--- a list item\nnot a diff").kind == "none"
    assert change(answer="Explanation first.\n" + DIFF).kind == "none"  # prose before a bare diff: not taken


def test_an_unclosed_fence_runs_to_the_end():
    assert change(answer="```diff\n" + DIFF).patch == DIFF


def test_looks_like_diff():
    assert looks_like_diff(DIFF) and looks_like_diff(PLAIN_DIFF) and looks_like_diff("\ndiff --git a/x b/x")
    assert not looks_like_diff("--- \nhello") and not looks_like_diff("") and not looks_like_diff(" diff --git a b")


def test_a_patch_read_from_an_answer_applies_with_git(tmp_path):
    """What the answer yields is what git apply takes (a real repository, a real git apply)."""
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "pager.py").write_text("def last(n, size):\n    return n // size\n")
    patch = change(answer=f"Fixed.\n```diff\n{DIFF}```\nThanks").patch
    (tmp_path / "fix.patch").write_text(patch)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "apply", "--check", str(tmp_path / "fix.patch")], cwd=repo, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "fix.patch")], cwd=repo, check=True)
    assert "(n + size - 1)" in (repo / "pager.py").read_text()


# -- properties ----------------------------------------------------------------------------------
diff_line = st.one_of(
    st.builds(lambda s: " " + s, st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))),
    st.builds(lambda s: "+" + s, st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))),
    st.builds(lambda s: "-" + s, st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))),
)
diff_body = st.builds(lambda lines: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n" + "".join(
    line + "\n" for line in lines), st.lists(diff_line, max_size=12))
prose = st.text(st.characters(blacklist_characters="`~", blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=examples(300), derandomize=True)
@given(st.text(), st.text())
def test_a_non_blank_patch_field_is_always_the_change(patch, answer):
    got = change(patch=patch, answer=answer)
    if patch.strip():
        assert got == CandidateChange(kind="patch", patch=patch, source="patch")
    else:
        assert got == CandidateChange(kind="none", source="patch")


@settings(max_examples=examples(300), derandomize=True)
@given(prose, diff_body, prose, st.sampled_from(["diff", "patch"]))
def test_a_fenced_diff_survives_any_prose_around_it(before, body, after, tag):
    answer = f"{before}\n```{tag}\n{body}```\n{after}"
    assert change(answer=answer) == CandidateChange(kind="patch", patch=body, source="answer")


@settings(max_examples=examples(500), derandomize=True)
@given(st.text())
def test_any_answer_reads_without_error_and_a_patch_is_never_blank(answer):
    got = change(answer=answer)
    assert got.kind in ("patch", "none") and got.files == {}
    if got.kind == "patch":
        assert got.patch.strip() and got.patch.endswith("\n") and got.source == "answer"
        assert got.patch == patch_from_answer(answer)
    else:
        assert got.patch == ""


def test_only_a_newline_ends_a_line():
    """Python's splitlines also splits on \\x85 and \\u2028; git does not, and neither does the reader."""
    body = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\x85```\n+z\u2028```\n"
    assert change(answer=f"```diff\n{body}```").patch == body
