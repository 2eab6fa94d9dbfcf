"""Candidate patches (oracle/repo/patching.py): ``git apply`` semantics, reasons a user can read,
paths that leave the tree or go through a link refused, and the base never changed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from oracle.repo import apply_files, apply_patch, destroy, make_tree, snapshot
from tests.repo_support import BASE_FILES, git, make_repo

CALC = BASE_FILES["src/tiny/calc.py"]


@pytest.fixture()
def setup(tmp_path):
    files = {**BASE_FILES, "docs/index.md": "docs\n"}
    repo = make_repo(tmp_path, files)
    # links of the repository's own: a directory link and a file link
    os.symlink("src", repo.path / "srclink")
    os.symlink("README.md", repo.path / "readme-link")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-q", "-m", "links")
    base_commit = git(repo.path, "rev-parse", "HEAD")
    base = snapshot(str(repo.path), None, base_commit, cache_root=tmp_path / "cache")
    tree = make_tree(base, tmp_path)
    yield repo, base, tree
    destroy(tree)


def _diff(repo, edits: dict[str, str | None]) -> str:
    """A real ``git diff`` of ``edits`` against the repository's HEAD (None deletes the file)."""
    for rel, text in edits.items():
        path = repo.path / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(repo.path, "add", "-A")
    diff = subprocess.run(["git", "diff", "--cached", "HEAD"], cwd=repo.path, capture_output=True,
                          text=True, check=True).stdout
    git(repo.path, "reset", "-q", "--hard", "HEAD")
    return diff


FIXED = CALC.replace("a - b", "a + b")


def test_a_real_fix_applies_and_the_base_stays_as_it_was(setup):
    repo, base, tree = setup
    before = os.stat(base.path / "src/tiny/calc.py")
    assert before.st_nlink == 2
    applied = apply_patch(tree, _diff(repo, {"src/tiny/calc.py": FIXED}))
    assert applied.ok and applied.paths == ["src/tiny/calc.py"] and applied.reason is None
    assert (tree / "src/tiny/calc.py").read_text() == FIXED
    assert (base.path / "src/tiny/calc.py").read_text() == CALC
    after = os.stat(base.path / "src/tiny/calc.py")
    assert after.st_ino == before.st_ino and after.st_nlink == 1  # the tree's link was broken, not the file
    assert os.stat(tree / "src/tiny/calc.py").st_nlink == 1
    assert git(tree, "status", "--porcelain") == "M src/tiny/calc.py"


def test_new_renamed_deleted_and_executable_files(setup):
    repo, base, tree = setup
    path = repo.path / "scripts/new.sh"
    path.parent.mkdir(exist_ok=True)
    git(repo.path, "mv", "docs/index.md", "docs/moved.md")
    diff_rename = subprocess.run(["git", "diff", "--cached", "-M", "HEAD"], cwd=repo.path, capture_output=True,
                                 text=True, check=True).stdout
    git(repo.path, "reset", "-q", "--hard", "HEAD")
    assert "rename from docs/index.md" in diff_rename
    path.write_text("#!/bin/sh\n")
    os.chmod(path, 0o755)
    (repo.path / "README.md").unlink()
    (repo.path / "src/tiny/new module.py").write_text("X = 1\n")
    git(repo.path, "add", "-A")
    diff = subprocess.run(["git", "diff", "--cached", "HEAD"], cwd=repo.path, capture_output=True, text=True,
                          check=True).stdout
    git(repo.path, "reset", "-q", "--hard", "HEAD")
    applied = apply_patch(tree, diff_rename + diff)
    assert applied.ok, applied.reason
    assert set(applied.paths) == {"docs/index.md", "docs/moved.md", "scripts/new.sh", "README.md",
                                  "src/tiny/new module.py"}
    assert not (tree / "docs/index.md").exists() and (tree / "docs/moved.md").read_text() == "docs\n"
    assert os.stat(tree / "scripts/new.sh").st_mode & 0o100
    assert not (tree / "README.md").exists() and (base.path / "README.md").exists()
    assert (tree / "src/tiny/new module.py").read_text() == "X = 1\n"


def test_empty_patch_changes_nothing(setup):
    _repo, _base, tree = setup
    before = sorted((str(p), p.stat().st_ino) for p in tree.rglob("*") if p.is_file())
    for empty in ("", "   \n\n"):
        applied = apply_patch(tree, empty)
        assert applied.ok and applied.paths == []
    assert sorted((str(p), p.stat().st_ino) for p in tree.rglob("*") if p.is_file()) == before


def test_a_patch_without_a_final_newline_applies(setup):
    repo, _base, tree = setup
    assert apply_patch(tree, _diff(repo, {"src/tiny/calc.py": FIXED}).rstrip("\n")).ok


def test_reasons_a_user_can_read(setup):
    repo, base, tree = setup
    long = "".join(f"line {i}\n" for i in range(1, 30))
    (repo.path / "src/tiny/long.py").write_text(long)
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-q", "-m", "long")
    base2 = snapshot(str(repo.path), None, git(repo.path, "rev-parse", "HEAD"), cache_root=base.path.parent.parent)
    tree2 = make_tree(base2, tree.parent)
    try:
        diff = _diff(repo, {"src/tiny/long.py": long.replace("line 2\n", "LINE 2\n").replace("line 25\n", "L25\n")})
        assert diff.count("@@ -") == 2
        broken = diff.replace(" line 24\n", " line twenty-four\n")
        applied = apply_patch(tree2, broken)
        assert not applied.ok and not applied.refused
        assert applied.reason == "hunk 2 of src/tiny/long.py does not apply (at line 22)"
        assert (tree2 / "src/tiny/long.py").read_text() == long  # all or nothing: hunk 1 was not applied
        # two files, the second does not apply: the first is left as it was too
        both = _diff(repo, {"README.md": "# changed\n"}) + broken
        assert not apply_patch(tree2, both).ok and (tree2 / "README.md").read_text() == "# tiny\n"
    finally:
        destroy(tree2)
    missing = ("diff --git a/src/y.py b/src/y.py\n--- a/src/y.py\n+++ b/src/y.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert apply_patch(tree, missing).reason == "src/y.py: no such file to patch"
    exists = ("diff --git a/README.md b/README.md\nnew file mode 100644\n--- /dev/null\n+++ b/README.md\n"
              "@@ -0,0 +1 @@\n+x\n")
    assert apply_patch(tree, exists).reason == "README.md: already exists (the patch creates it)"
    assert apply_patch(tree, "I fixed the bug by changing add().\n").reason == "patch is not a unified diff"
    corrupt = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# tiny\n"
    assert apply_patch(tree, corrupt).reason.startswith("patch is not a unified diff (corrupt at line")


def _outside_untouched(tmp_path: Path) -> None:
    assert not (tmp_path / "escaped").exists()
    assert not Path("/escaped-by-patch").exists()


@pytest.mark.parametrize("patch, why", [
    ("diff --git a/../escaped b/../escaped\nnew file mode 100644\n--- /dev/null\n+++ b/../escaped\n"
     "@@ -0,0 +1 @@\n+x\n", "'..'"),
    ("--- /dev/null\n+++ /escaped-by-patch\n@@ -0,0 +1 @@\n+x\n", "absolute"),
    ("diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+/etc\n"
     "\\ No newline at end of file\n", "symbolic link"),
    ("diff --git a/readme-link b/readme-link\nindex 1234567..89abcde 120000\n--- a/readme-link\n+++ b/readme-link\n"
     "@@ -1 +1 @@\n-README.md\n\\ No newline at end of file\n+/etc/passwd\n\\ No newline at end of file\n",
     "symbolic link"),
    ("diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n [core]\n"
     "+\tfsmonitor = touch /escaped-by-patch\n", ".git"),
    ("diff --git a/src/.GIT/hooks b/src/.GIT/hooks\nnew file mode 100644\n--- /dev/null\n+++ b/src/.GIT/hooks\n"
     "@@ -0,0 +1 @@\n+x\n", ".git"),
    ("diff --git a/srclink/tiny/calc.py b/srclink/tiny/calc.py\n--- a/srclink/tiny/calc.py\n"
     "+++ b/srclink/tiny/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n",
     "symbolic link srclink"),
    ("diff --git a/readme-link b/readme-link\n--- a/readme-link\n+++ b/readme-link\n@@ -1 +1 @@\n-# tiny\n+# x\n",
     "symbolic link"),
    ('diff --git "a/\\056\\056/escaped" "b/\\056\\056/escaped"\nnew file mode 100644\n--- /dev/null\n'
     '+++ "b/\\056\\056/escaped"\n@@ -0,0 +1 @@\n+x\n', "'..'"),
], ids=["dotdot", "absolute", "new-link", "retarget-link", "git-config", "nested-git", "through-dir-link",
        "file-link", "quoted-dotdot"])
def test_unsafe_patches_are_refused(setup, tmp_path, patch, why):
    _repo, base, tree = setup
    before = (base.path / "src/tiny/calc.py").read_text(), (base.path / "README.md").read_text()
    applied = apply_patch(tree, patch)
    assert not applied.ok and applied.refused, applied
    assert why in applied.reason
    _outside_untouched(tmp_path)
    assert (tree / "src/tiny/calc.py").read_text() == CALC and os.readlink(tree / "readme-link") == "README.md"
    assert ((base.path / "src/tiny/calc.py").read_text(), (base.path / "README.md").read_text()) == before
    assert "fsmonitor" not in (tree / ".git/config").read_text()


def test_apply_files_writes_whole_files_and_refuses_what_a_patch_may_not(setup, tmp_path):
    _repo, base, tree = setup
    applied = apply_files(tree, {"src/tiny/calc.py": FIXED, "src/tiny/sub/new.py": "NEW = 1\n"})
    assert applied.ok and applied.paths == ["src/tiny/calc.py", "src/tiny/sub/new.py"]
    assert (tree / "src/tiny/calc.py").read_text() == FIXED and (tree / "src/tiny/sub/new.py").is_file()
    assert (base.path / "src/tiny/calc.py").read_text() == CALC
    assert os.stat(tree / "scripts/run.sh").st_mode & 0o100
    assert apply_files(tree, {"scripts/run.sh": "#!/bin/sh\n"}).ok and os.stat(tree / "scripts/run.sh").st_mode & 0o100
    assert apply_files(tree, {}).ok
    for files, why in [({"../escaped": "x"}, "'..'"), ({"/escaped-by-patch": "x"}, "absolute"),
                       ({".git/config": "x"}, ".git"), ({"srclink/tiny/calc.py": "x"}, "symbolic link srclink"),
                       ({"src": "x"}, "is a directory"), ({"ok.py": "fine", "a/../../escaped": "x"}, "'..'")]:
        applied = apply_files(tree, files)
        assert not applied.ok and applied.refused and why in applied.reason, (files, applied)
    assert not (tree / "ok.py").exists()  # nothing is written when one path is refused
    assert apply_files(tree, {"README.md/x.py": "x"}).reason == "README.md/x.py: README.md is a file in the tree"
    _outside_untouched(tmp_path)
    # a link at the name itself is replaced by the file, never written through
    assert apply_files(tree, {"readme-link": "now a file\n"}).ok
    assert not (tree / "readme-link").is_symlink() and (tree / "README.md").read_text() == "# tiny\n"
