"""The protected surface (oracle/repo/protected.py): what a candidate changed there is reported and
put back before the run (base plus the test patch), and what changes during the run is caught."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oracle.errors import RepositoryError
from oracle.repo import (ProtectedChange, apply_files, apply_patch, changed_since, classify, destroy, fingerprint,
                         make_tree, restore, snapshot)
from tests.repo_support import BASE_FILES, git, make_repo

FILES = {**BASE_FILES, "tox.ini": "[tox]\nenvlist = py3\n\n[pytest]\naddopts = -q\n",
         "src/tiny/tests/__init__.py": "", "src/tiny/tests/helpers.py": "H = 1\n",
         "src/tiny/data/words.txt": "alpha\nbeta\n"}


@pytest.mark.parametrize("path, category", [
    ("tests/test_calc.py", "test_file"), ("test_x.py", "test_file"), ("pkg/calc_test.py", "test_file"),
    ("tests/data/input.json", "test_file"), ("src/pkg/test/helpers.py", "test_file"),
    ("tests/__init__.py", "test_file"),
    ("conftest.py", "conftest"), ("src/conftest.py", "conftest"), ("tests/conftest.py", "conftest"),
    ("pytest.ini", "test_config"), (".pytest.ini", "test_config"), ("tox.ini", "test_config"),
    ("pytest.toml", "test_config"), ("setup.cfg", "test_config"), ("pyproject.toml", "test_config"),
    ("sub/pyproject.toml", "test_config"),
    ("sitecustomize.py", "site_hook"), ("src/usercustomize.py", "site_hook"), ("src/x.pth", "site_hook"),
    ("a/b/evil.pth", "site_hook"),
    (".git", "git"), (".git/config", "git"), ("src/.git/HEAD", "git"),
    ("__pycache__/conftest.cpython-311-pytest-8.3.2.pyc", "bytecode"), ("src/x.pyc", "bytecode"),
    ("src/calc.py", None), ("README.md", None), ("src/testing.py", None), ("src/tests.py", None),
    ("contest.py", None), ("setup.py", None), ("src/attest/x.py", None), ("mytest_x.py", None),
])
def test_classify(path, category):
    assert classify(path) == category


@pytest.fixture()
def setup(tmp_path):
    repo = make_repo(tmp_path, FILES)
    base = snapshot(str(repo.path), None, repo.base, cache_root=tmp_path / "cache")
    tree = make_tree(base, tmp_path)
    yield repo, base, tree
    destroy(tree)


def _test_patch(repo) -> str:
    """The task's test patch: a new failing-to-passing test, an edited test file, a data file."""
    (repo.path / "tests/test_calc.py").write_text(FILES["tests/test_calc.py"] + "\n\ndef test_add_more():\n"
                                                  "    assert add(1, 1) == 2\n")
    (repo.path / "tests/test_new.py").write_text("def test_new():\n    assert True\n")
    (repo.path / "src/tiny/data/words.txt").write_text("alpha\nbeta\ngamma\n")
    git(repo.path, "add", "-A")
    diff = subprocess.run(["git", "diff", "--cached", "HEAD"], cwd=repo.path, capture_output=True, text=True,
                          check=True).stdout
    git(repo.path, "reset", "-q", "--hard", "HEAD")
    return diff


def _replace(path: Path, text: str) -> None:
    """What a candidate (or a patch) does to a shared file: a new file under the name."""
    if path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_untouched_tree_reports_nothing_and_gets_the_test_patch(setup):
    repo, base, tree = setup
    patch = _test_patch(repo)
    assert restore(tree, base, patch) == []
    assert "test_add_more" in (tree / "tests/test_calc.py").read_text()
    assert (tree / "tests/test_new.py").read_text().startswith("def test_new")
    assert (tree / "src/tiny/data/words.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert "test_add_more" not in (base.path / "tests/test_calc.py").read_text()  # the base is the base
    assert (base.path / "src/tiny/data/words.txt").read_text() == "alpha\nbeta\n"


def test_each_change_to_the_surface_is_reported_and_put_back(setup, tmp_path):
    repo, base, tree = setup
    patch = _test_patch(repo)
    fix = FILES["src/tiny/calc.py"].replace("a - b", "a + b")
    candidate = {
        "src/tiny/calc.py": fix,  # the fix itself: not protected, kept
        "tests/test_calc.py": "def test_add():\n    pass\n",  # the failing test edited
        "conftest.py": "def pytest_runtest_makereport(item, call):\n    pass\n",  # an outcome hook
        "src/tiny/tests/helpers.py": "H = 2\n",
        "src/evil.pth": "import os\n",
        "src/sitecustomize.py": "import os\n",
        "pytest.ini": "[pytest]\naddopts = -k nothing\n",
        "tests/test_new.py": "def test_new():\n    pass\n",  # a new test where the test patch adds its own
        "tests/__pycache__/test_calc.cpython-311-pytest-8.3.2.pyc": "forged",
        "src/tiny/data/words.txt": "forged\n",  # a file only the test patch makes protected
    }
    assert apply_files(tree, candidate).ok
    os.unlink(tree / "tests/conftest.py")
    _replace(tree / "tox.ini", "[pytest]\naddopts = -p no:python\n")
    changes = restore(tree, base, patch)
    assert changes == [
        ProtectedChange(path="conftest.py", category="conftest", change="added"),
        ProtectedChange(path="pytest.ini", category="test_config", change="added"),
        ProtectedChange(path="src/evil.pth", category="site_hook", change="added"),
        ProtectedChange(path="src/sitecustomize.py", category="site_hook", change="added"),
        ProtectedChange(path="src/tiny/data/words.txt", category="test_file", change="modified"),
        ProtectedChange(path="src/tiny/tests/helpers.py", category="test_file", change="modified"),
        ProtectedChange(path="tests/__pycache__/test_calc.cpython-311-pytest-8.3.2.pyc", category="bytecode",
                        change="added"),
        ProtectedChange(path="tests/conftest.py", category="conftest", change="deleted"),
        ProtectedChange(path="tests/test_calc.py", category="test_file", change="modified"),
        ProtectedChange(path="tests/test_new.py", category="test_file", change="added"),
        ProtectedChange(path="tox.ini", category="test_config", change="modified"),
    ]
    assert (tree / "src/tiny/calc.py").read_text() == fix
    for gone in ("conftest.py", "pytest.ini", "src/evil.pth", "src/sitecustomize.py",
                 "tests/__pycache__/test_calc.cpython-311-pytest-8.3.2.pyc"):
        assert not (tree / gone).exists(), gone
    for rel in ("tests/conftest.py", "tox.ini", "src/tiny/tests/helpers.py"):
        assert (tree / rel).read_text() == FILES[rel]
        assert os.stat(tree / rel).st_ino == os.stat(base.path / rel).st_ino  # the base's own file again
    assert "test_add_more" in (tree / "tests/test_calc.py").read_text()
    assert (tree / "src/tiny/data/words.txt").read_text() == "alpha\nbeta\ngamma\n"
    # a second restore finds nothing left to report
    assert restore(tree, base, patch) == []


def test_pyproject_and_setup_cfg_count_only_their_test_sections(setup):
    _repo, base, tree = setup
    honest = {"pyproject.toml": FILES["pyproject.toml"].replace('version = "0.1"', 'version = "0.2"\n'
                                                                'dependencies = ["attrs"]'),
              "setup.cfg": FILES["setup.cfg"].replace("name = tiny", "name = tiny\nversion = 2")}
    assert apply_files(tree, honest).ok
    assert restore(tree, base, None) == []
    assert (tree / "pyproject.toml").read_text() == honest["pyproject.toml"]  # the candidate's edit stays
    assert (tree / "setup.cfg").read_text() == honest["setup.cfg"]
    forging = {
        "pyproject.toml": honest["pyproject.toml"] + 'addopts = "-p no:python"\n',
        "setup.cfg": honest["setup.cfg"].replace("addopts = -q", "addopts = -q -k not_add"),
        "sub/pyproject.toml": '[project.entry-points.pytest11]\nforge = "tiny.forge"\n',
    }
    assert apply_files(tree, forging).ok
    assert restore(tree, base, None) == [
        ProtectedChange(path="pyproject.toml", category="test_config", change="modified"),
        ProtectedChange(path="setup.cfg", category="test_config", change="modified"),
        ProtectedChange(path="sub/pyproject.toml", category="test_config", change="added"),
    ]
    assert (tree / "pyproject.toml").read_text() == FILES["pyproject.toml"]  # the whole file put back
    assert (tree / "setup.cfg").read_text() == FILES["setup.cfg"]
    assert not (tree / "sub/pyproject.toml").exists()
    assert apply_files(tree, {"pyproject.toml": "this is [ not toml"}).ok
    assert restore(tree, base, None) == [ProtectedChange(path="pyproject.toml", category="test_config",
                                                         change="modified")]


def test_git_changes_are_reported_and_put_back(setup):
    _repo, base, tree = setup
    _replace(tree / ".git/config", "[core]\n\tfsmonitor = touch /tmp/oracle-owned\n")
    _replace(tree / ".git/refs/heads/future", "0" * 40 + "\n")
    assert restore(tree, base, None) == [
        ProtectedChange(path=".git/config", category="git", change="modified"),
        ProtectedChange(path=".git/refs/heads/future", category="git", change="added"),
    ]
    assert (tree / ".git/config").read_bytes() == (base.path / ".git/config").read_bytes()
    assert git(tree, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


def test_restore_never_follows_a_link_the_candidate_left(setup, tmp_path):
    _repo, base, tree = setup
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_calc.py").write_text("outside\n")
    (outside / "victim.txt").write_text("victim\n")
    # a tests directory replaced by a link to somewhere else, a conftest that is a link
    os.rename(tree / "tests", tree / "tests-moved")
    os.symlink(outside, tree / "tests")
    os.symlink(outside / "victim.txt", tree / "conftest.py")
    os.symlink(base.path / "src", tree / "src/tiny/tests-link")
    changes = restore(tree, base, None)
    assert ProtectedChange(path="conftest.py", category="conftest", change="added") in changes
    assert ProtectedChange(path="tests/test_calc.py", category="test_file", change="deleted") in changes
    assert (outside / "test_calc.py").read_text() == "outside\n" and (outside / "victim.txt").read_text() == "victim\n"
    assert sorted(p.name for p in outside.iterdir()) == ["test_calc.py", "victim.txt"]
    assert not (tree / "tests").is_symlink()
    assert (tree / "tests/test_calc.py").read_text() == FILES["tests/test_calc.py"]
    assert not os.path.lexists(tree / "conftest.py")
    assert (base.path / "tests/test_calc.py").read_text() == FILES["tests/test_calc.py"]


def test_fingerprint_catches_what_the_run_changes(setup):
    repo, base, tree = setup
    patch = _test_patch(repo)
    restore(tree, base, patch)
    extra = list(base.with_test_patch(patch))
    before = fingerprint(tree, extra)
    assert "tests/test_calc.py" in before and ".git/config" in before and "src/tiny/data/words.txt" in before
    assert "src/tiny/calc.py" not in before
    assert changed_since(tree, before, extra) == []
    # what a test run writes itself is not a change
    (tree / "tests/__pycache__").mkdir()
    (tree / "tests/__pycache__/test_calc.cpython-311-pytest-8.3.2.pyc").write_bytes(b"\0")
    (tree / ".pytest_cache/v").mkdir(parents=True)
    (tree / ".pytest_cache/v/x").write_text("x")
    _replace(tree / "src/tiny/calc.py", "changed by the run\n")
    assert changed_since(tree, before, extra) == []
    # what a forging run would do
    _replace(tree / "tests/test_calc.py", "def test_add():\n    pass\n")
    _replace(tree / "src/tiny/sub/conftest.py", "# late conftest\n")
    _replace(tree / "src/tiny/zz.pth", "import os\n")
    os.unlink(tree / "tests/test_new.py")
    os.symlink("/etc/passwd", tree / "sitecustomize.py")
    _replace(tree / "src/tiny/data/words.txt", "changed\n")
    assert changed_since(tree, before, extra) == [
        ProtectedChange(path="sitecustomize.py", category="site_hook", change="added"),
        ProtectedChange(path="src/tiny/data/words.txt", category="test_file", change="modified"),
        ProtectedChange(path="src/tiny/sub/conftest.py", category="conftest", change="added"),
        ProtectedChange(path="src/tiny/zz.pth", category="site_hook", change="added"),
        ProtectedChange(path="tests/test_calc.py", category="test_file", change="modified"),
        ProtectedChange(path="tests/test_new.py", category="test_file", change="deleted"),
    ]


def test_a_patched_tree_restored_has_the_candidates_fix_and_the_tasks_tests(setup):
    repo, base, tree = setup
    patch = _test_patch(repo)
    (repo.path / "src/tiny/calc.py").write_text(FILES["src/tiny/calc.py"].replace("a - b", "a + b"))
    (repo.path / "tests/test_calc.py").write_text("def test_add():\n    assert True\n")
    candidate = subprocess.run(["git", "diff"], cwd=repo.path, capture_output=True, text=True, check=True).stdout
    git(repo.path, "checkout", "-q", "--", ".")
    assert apply_patch(tree, candidate).ok
    assert restore(tree, base, patch) == [ProtectedChange(path="tests/test_calc.py", category="test_file",
                                                          change="modified")]
    assert "a + b" in (tree / "src/tiny/calc.py").read_text()
    assert "test_add_more" in (tree / "tests/test_calc.py").read_text()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=tree, capture_output=True, text=True).stdout
    assert status.splitlines() == [" M src/tiny/calc.py", " M src/tiny/data/words.txt", " M tests/test_calc.py",
                                   "?? tests/test_new.py"]


def test_a_file_already_as_the_test_patch_makes_it_is_not_a_change(setup):
    repo, base, tree = setup
    patch = _test_patch(repo)
    assert apply_files(tree, {"tests/test_new.py": "def test_new():\n    assert True\n"}).ok
    assert restore(tree, base, patch) == []


def test_a_test_patch_that_does_not_apply_is_the_tasks_error(setup):
    _repo, base, tree = setup
    bad = "--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1 +1 @@\n-nothing like this\n+x\n"
    with pytest.raises(RepositoryError, match=r"^task\.test_patch: hunk 1 of tests/test_calc\.py does not apply"):
        restore(tree, base, bad)
