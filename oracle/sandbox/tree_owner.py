"""Hand a repository tree's directories to a run's slot uid for that run, and take them back after.

Why directories only: the tree's files are root-owned 0644 hardlinks shared with a base snapshot.
The run's uid must be able to create, rename and delete entries (an editable build, a test writing
beside itself, a candidate replacing a file) but never write a shared file in place: owning the
directory allows the first, the files' root ownership forbids the second.

Nothing here follows a symbolic link: entries are examined with ``lstat`` and changed with
``follow_symlinks=False``, so a link the candidate planted (to ``/etc``, to another run's tree)
is never chowned through, either before the run or after it.
"""

from __future__ import annotations

import os
import stat


def _directories(root: str, skip_git: bool = False) -> list[str]:
    """Every directory under ``root`` (itself included), without entering a link; ``skip_git``
    leaves out the top-level ``.git`` and all it holds."""
    found, todo = [], [root]
    git = os.path.join(root, ".git")
    while todo:
        path = todo.pop()
        found.append(path)
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and not (skip_git and entry.path == git):
                        todo.append(entry.path)
        except OSError:
            continue
    return found


def check_tree(tree: str) -> str:
    """The tree's real path, refusing a link, a non-directory, or a parent the run's uid cannot pass."""
    if os.path.islink(tree) or not os.path.isdir(tree):
        raise ValueError(f"RunRequest.tree: {tree} is not a directory (a link is refused)")
    real = os.path.realpath(tree)
    parent = os.path.dirname(real)
    while parent and parent != "/":
        mode = os.stat(parent).st_mode
        if not mode & stat.S_IXOTH:
            raise ValueError(f"RunRequest.tree: the sandbox user cannot pass {parent} (mode {oct(mode & 0o777)}); "
                             "put trees under a directory others may traverse (0711)")
        parent = os.path.dirname(parent)
    return real


def give(tree: str, uid: int) -> None:
    """The run's uid owns every directory of ``tree`` (files keep their owner), except the
    repository's ``.git``: the run may read its history (one commit) but never change it."""
    for path in _directories(tree, skip_git=True):
        os.chown(path, uid, uid, follow_symlinks=False)


def take_back(tree: str, uid: int, gid: int) -> None:
    """Every directory of ``tree`` (those the run made too) back to ``uid``/``gid``, after the run."""
    for path in _directories(tree):
        try:
            os.chown(path, uid, gid, follow_symlinks=False)
        except OSError:
            continue
