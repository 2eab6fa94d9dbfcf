"""Private: the host side of repository-patch tasks (issue 28). Not part of the public API.

- base.py: a task's repository at its base commit, extracted once per commit into a shared,
  read-only cache, with a new one-commit ``.git`` and nothing of the later history;
- worktree.py: one working tree per candidate, a hardlink farm of the base, removed without
  following a link;
- patching.py: a candidate's unified diff (``git apply`` semantics) or files, written without ever
  changing the base or writing through a link;
- protected.py: the protected surface (tests, conftest, test configuration, site hooks, ``.git``):
  put back before the run, fingerprinted and checked after it.

Everything here takes plain values (paths, strings), never a Task, and runs nothing of the
candidate's: the sandboxed test run is oracle/sandbox's, the verdict the verifier's.
"""

from oracle.repo.base import BaseSnapshot, default_root, snapshot
from oracle.repo.patching import Applied, apply_files, apply_patch
from oracle.repo.protected import Category, ProtectedChange, changed_since, classify, fingerprint, restore
from oracle.repo.worktree import destroy, make_tree, own_dirs

__all__ = ["Applied", "BaseSnapshot", "Category", "ProtectedChange", "apply_files", "apply_patch", "changed_since",
           "classify", "default_root", "destroy", "fingerprint", "make_tree", "own_dirs", "restore", "snapshot"]
