"""Running ``git`` on the host with nothing of the user's or the system's git setup.

Why: these commands run as the oracle's user (often root) on repositories and patches that come
with a task or a candidate. A user's ``~/.gitconfig``, a system ``/etc/gitconfig`` or inherited
``GIT_*`` variables could name hooks, an fsmonitor command, replacement objects or another
repository; none of that may change what is extracted or applied, or run anything. So every call
gets a fresh environment: no global or system config, ``HOME`` an empty private directory, no
replace refs, no prompts, the C locale (git's messages are parsed), and command-line settings that
switch off hooks and fsmonitor whatever a repository's own config says.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from oracle.errors import RepositoryError

_SAFE_SETTINGS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "safe.directory=*",
                  "-c", "core.quotePath=true", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
                  "-c", "core.logAllRefUpdates=false", "-c", "advice.detachedHead=false")
"""Command-line config outranks a repository's own: a source repository's hooks or fsmonitor never
run, ownership by another user is accepted (the oracle reads it, it does not trust its config),
and nothing writes a reflog or starts a background gc in the trees we make."""

_home: str | None = None


def _empty_home() -> str:
    """A private empty directory for ``HOME``/``XDG_CONFIG_HOME`` (made once per process)."""
    global _home
    if _home is None or not os.path.isdir(_home):
        _home = tempfile.mkdtemp(prefix="oracle-git-home-")
        atexit.register(shutil.rmtree, _home, True)
    return _home


def git_env() -> dict[str, str]:
    home = _empty_home()
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "XDG_CONFIG_HOME": home,
            "LC_ALL": "C", "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "GIT_ASKPASS": "", "GIT_EDITOR": ":"}


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise RepositoryError("task.repository: git is not installed on this machine (it extracts the base commit)")
    return found


def run_git(args: list[str], *, cwd: str | Path | None = None, git_dir: str | Path | None = None,
            work_tree: str | Path | None = None, input: bytes | None = None,
            extra_env: dict[str, str] | None = None, timeout: float = 600.0) -> subprocess.CompletedProcess[bytes]:
    """``git <args>`` in the safe environment (see module docstring); never raises on a non-zero
    exit: callers turn git's message into their own error."""
    env = git_env()
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    if cwd is not None:
        # git never looks above the directory it is run in for a repository.
        env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd).resolve().parent)
    if extra_env:
        env.update(extra_env)
    try:
        return subprocess.run([git_binary(), *_SAFE_SETTINGS, *args], cwd=cwd, env=env, input=input,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RepositoryError(f"task.repository: git {args[0]} took more than {timeout:.0f} s") from None


def message(result: subprocess.CompletedProcess[bytes]) -> str:
    """git's error message, on one line, for a user."""
    text = result.stderr.decode("utf-8", "replace").strip() or result.stdout.decode("utf-8", "replace").strip()
    lines = [line.removeprefix("fatal: ").removeprefix("error: ").strip() for line in text.splitlines()]
    return "; ".join(line for line in lines if line)[:500]
