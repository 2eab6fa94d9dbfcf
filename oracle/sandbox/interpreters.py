"""Which interpreters the sandbox user can run, what they are, and what must be mounted for them.

Why a module of its own: the sandbox drops to an unprivileged uid before it starts the interpreter
(and nsjail or bubblewrap mount its directories as that uid), so an interpreter root can run may
still be unusable: a venv in a home directory of mode 700, a pyenv under /root. Saying only "not
supported" hides the fix; every check here returns the exact reason instead (``problem``), naming
the first directory the sandbox user cannot enter and its mode.

A venv's ``bin/python`` is a link to a base interpreter: both the venv (its ``pyvenv.cfg`` and
site-packages) and the base installation must be readable, and both are mounted read-only
(``mounts``). The facts an environment is keyed by (version, implementation, platform) come from
running the interpreter once (``describe``), kept per path and modification time.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from oracle.sandbox import slots

FIX = "build the environment with `oracle env build` (environment.requirements) or move the venv " \
      "where other users can read it"
"""What to do about an interpreter the sandbox user cannot read."""
SYSTEM_PYTHONS = ("/usr/bin/python3.11", "/usr/bin/python3", "/usr/local/bin/python3")
_DESCRIBE = ("import json, platform, sys, sysconfig\n"
             "print(json.dumps({'version': platform.python_version(), 'implementation': "
             "sys.implementation.name, 'cache_tag': sys.implementation.cache_tag, 'platform': "
             "sysconfig.get_platform(), 'libc': '-'.join(platform.libc_ver()), 'prefix': sys.prefix, "
             "'base_prefix': sys.base_prefix, 'exec_prefix': sys.exec_prefix, "
             "'base_exec_prefix': sys.base_exec_prefix, 'executable': sys.executable}))\n")


def _mode(path: Path) -> str:
    try:
        return f"{stat.S_IMODE(os.stat(path).st_mode):o}"
    except OSError:
        return "?"


def unreadable(path: str | os.PathLike[str], *, need_exec: bool = False) -> str | None:
    """Why the sandbox user cannot reach ``path`` (every directory above it searchable, the path
    itself readable, and executable when ``need_exec``); None when it can. The path as written and
    the path its links lead to are both checked: a mount follows the links."""
    if not slots.can_drop_privileges():  # the run keeps our uid: what we can read, it can
        target = os.path.realpath(path)
        if not os.access(target, os.R_OK | (os.X_OK if need_exec else 0)):
            return f"{target} is not readable{' and executable' if need_exec else ''} by this user"
        return None
    seen: set[Path] = set()
    for candidate in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        if candidate in seen:
            continue
        seen.add(candidate)
        for parent in list(candidate.parents)[::-1]:
            try:
                mode = os.stat(parent).st_mode
            except OSError as exc:
                return f"{parent} cannot be read: {exc.strerror}"
            if not mode & stat.S_IXOTH:
                return f"the sandbox user cannot read {parent}: mode {stat.S_IMODE(mode):o}"
        try:
            mode = os.stat(candidate).st_mode
        except OSError as exc:
            return f"{candidate} cannot be read: {exc.strerror}"
        wanted = stat.S_IROTH | (stat.S_IXOTH if need_exec or stat.S_ISDIR(mode) else 0)
        if mode & wanted != wanted:
            return f"the sandbox user cannot read {candidate}: mode {stat.S_IMODE(mode):o}"
    return None


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter as the sandbox will run it."""

    path: str
    version: str
    """``3.11.2``"""
    implementation: str
    cache_tag: str
    """``cpython-311``: which compiled files and wheels fit."""
    platform: str
    """``linux-x86_64`` and the C library (``glibc-2.36``): which binary wheels fit."""
    prefixes: tuple[str, ...]
    """sys.prefix, sys.base_prefix and the exec prefixes (a venv's and its base's)."""

    @property
    def mounts(self) -> tuple[str, ...]:
        """The directories the sandbox must mount read-only to run it (nothing under /usr, which is
        always there)."""
        return tuple(sorted({p for p in self.prefixes if p and p != "/usr" and not p.startswith("/usr/")}))


def venv_root(executable: str) -> Path | None:
    """The venv an interpreter path belongs to (``<venv>/bin/python`` beside ``<venv>/pyvenv.cfg``)."""
    root = Path(os.path.abspath(executable)).parent.parent
    return root if (root / "pyvenv.cfg").is_file() else None


def problem(executable: str | None) -> str | None:
    """Why the sandbox cannot run ``executable`` as a Python interpreter; None when it can."""
    if not executable:
        return "no interpreter given"
    if not os.path.isabs(executable):
        return f"{executable}: give the interpreter as an absolute path"
    if not os.path.exists(executable):
        return f"{executable} does not exist"
    if not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        return f"{executable} is not an executable file"
    why = unreadable(executable, need_exec=True)
    if why is None and (root := venv_root(executable)) is not None:
        why = unreadable(root / "pyvenv.cfg")
    if why is None:
        try:
            info = describe(executable)
        except OSError as exc:
            return f"{executable} does not run as a Python interpreter: {exc}"
        for prefix in info.mounts:
            why = unreadable(prefix)
            if why:
                break
    return why


_DESCRIBED: dict[tuple[str, float, int], Interpreter] = {}
_LOCK = threading.Lock()


def describe(executable: str) -> Interpreter:
    """Run the interpreter once to learn what it is (kept per path, target and modification time);
    OSError when it does not run."""
    real = os.path.realpath(executable)
    st = os.stat(real)
    key = (os.path.abspath(executable) + "\0" + real, st.st_mtime, st.st_size)
    with _LOCK:
        found = _DESCRIBED.get(key)  # type: ignore[call-overload]
    if found is not None:
        return found
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    try:
        out = subprocess.run([executable, "-E", "-s", "-c", _DESCRIBE], capture_output=True, text=True,
                             timeout=30, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OSError(str(exc)) from None
    if out.returncode != 0:
        raise OSError((out.stderr.strip().splitlines() or [f"exit code {out.returncode}"])[-1])
    try:
        data = json.loads(out.stdout)
    except ValueError:
        raise OSError(f"unexpected output {out.stdout[:200]!r}") from None
    info = Interpreter(path=executable, version=data["version"], implementation=data["implementation"],
                       cache_tag=data["cache_tag"] or "", platform=f"{data['platform']}-{data['libc']}".rstrip("-"),
                       prefixes=tuple(data[k] for k in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix")))
    with _LOCK:
        _DESCRIBED[key] = info  # type: ignore[index]
    return info


def default_candidates() -> tuple[str, ...]:
    """Where the verifier looks for Python when nothing names one: its own interpreter first."""
    return (sys.executable, *SYSTEM_PYTHONS)


def find_default() -> tuple[str | None, list[str]]:
    """The first default candidate the sandbox can run, and why each one before it was refused."""
    refused: list[str] = []
    for path in dict.fromkeys(default_candidates()):
        why = problem(path)
        if why is None:
            return path, refused
        refused.append(f"{path}: {why}")
    return None, refused


def find_version(version: str, search_path: str | None = None) -> tuple[str | None, list[str]]:
    """An interpreter of ``version`` (``3.11`` or ``3.11.2``) the sandbox can run, and why each other
    one looked at was refused."""
    names = [f"python{'.'.join(version.split('.')[:2])}"]
    places: list[str] = [sys.executable]
    for name in names:
        for d in ("/usr/bin", "/usr/local/bin"):
            places.append(f"{d}/{name}")
        found = shutil.which(name, path=search_path)
        if found:
            places.append(found)
    places += list(SYSTEM_PYTHONS)
    refused: list[str] = []
    for path in dict.fromkeys(places):
        if not os.path.exists(path):
            continue
        why = problem(path)
        if why is None:
            have = describe(path).version
            if have == version or have.startswith(version + "."):
                return path, refused
            continue
        refused.append(f"{path}: {why}")
    return None, refused


__all__ = ["FIX", "Interpreter", "describe", "find_default", "find_version", "problem", "unreadable", "venv_root"]
