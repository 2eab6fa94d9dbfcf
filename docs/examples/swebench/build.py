"""Write a small SWE-bench-style data set for ``oracle import swebench`` (docs/cli.md).

    python docs/examples/swebench/build.py OUT

OUT/repos/acme__pager.bundle: a tiny library (``page_count`` drops the last partial page) with its
tests, at a base commit, plus a later commit holding the fix (the history a candidate must not
see). OUT/dataset.jsonl: one row for it, as the published data set writes rows (FAIL_TO_PASS and
PASS_TO_PASS as JSON strings). OUT/predictions.jsonl: two models' predictions, the right fix and
one that changes nothing. Dates and names are fixed, so the commit ids are the same on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BUGGY = "def page_count(items, size):\n    return items // size\n"
FIXED = "def page_count(items, size):\n    return (items + size - 1) // size\n"
TESTS = "from pager import page_count\n\n\ndef test_full_pages():\n    assert page_count(10, 5) == 2\n"
NEW_TEST = "\n\ndef test_last_partial_page():\n    assert page_count(11, 5) == 3\n"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "acme", "GIT_AUTHOR_EMAIL": "dev@acme.invalid", "GIT_COMMITTER_NAME": "acme",
       "GIT_COMMITTER_EMAIL": "dev@acme.invalid", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
       "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout


def build(out: Path) -> None:
    out = out.resolve()
    (out / "repos").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "pager"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "pager.py").write_text(BUGGY)
        (repo / "tests").mkdir()
        (repo / "tests" / "test_pager.py").write_text(TESTS)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "pager: page_count")
        base = git(repo, "rev-parse", "HEAD").strip()
        (repo / "pager.py").write_text(FIXED)
        gold = git(repo, "diff")
        (repo / "tests" / "test_pager.py").write_text(TESTS + NEW_TEST)
        test_patch = git(repo, "diff", "--", "tests")
        git(repo, "commit", "-q", "-am", "count the last partial page")  # the future a candidate must not see
        git(repo, "bundle", "create", str(out / "repos" / "acme__pager.bundle"), "--all")
    row = {"instance_id": "acme__pager-1", "repo": "acme/pager", "base_commit": base, "patch": gold,
           "test_patch": test_patch, "problem_statement": "page_count(11, 5) returns 2: the last partial page is lost.",
           "FAIL_TO_PASS": json.dumps(["tests/test_pager.py::test_last_partial_page"]),
           "PASS_TO_PASS": json.dumps(["tests/test_pager.py::test_full_pages"])}
    predictions = [{"instance_id": "acme__pager-1", "model_name_or_path": "model-a", "model_patch": gold},
                   {"instance_id": "acme__pager-1", "model_name_or_path": "model-b", "model_patch": ""}]
    (out / "dataset.jsonl").write_text(json.dumps(row) + "\n")
    (out / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/examples/swebench/build.py OUT")
    build(Path(sys.argv[1]))
