"""Install requirements into a directory with the user's own pip (or uv): the builder behind envcache.py.

Why the interpreter's own pip (``<python> -m pip install --target DIR``): pip then resolves wheels
for exactly the interpreter the sandbox runs (its version, ABI and platform) and compiles bytecode
with it. An interpreter without pip gets the verifier's own pip, told to install for it
(``pip --python <python>``, pip 22.3 or later), which does the same from outside.

The user's environment is passed on as it is (pip.conf, ``PIP_INDEX_URL``, ``PIP_FIND_LINKS``,
``PIP_NO_INDEX``, proxies, certificates), less ``PYTHONPATH``/``PYTHONHOME``/``PYTHONSTARTUP``,
which belong to the interpreter running the oracle and would point another one at the wrong
standard library. A failure raises ``EnvironmentBuildError`` with pip's own last words.

``verifier.environment_installer: uv`` uses uv instead (``uv pip install --python <python>
--target DIR --compile-bytecode``), with the user's uv configuration (uv.toml, ``UV_INDEX_URL``,
``UV_FIND_LINKS``, ``UV_NO_INDEX``...; uv does not read pip.conf). Either way the result is the same
kind of directory, under the same key: which installer built an environment is in its manifest.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from oracle.errors import EnvironmentBuildError
from oracle.sandbox.interpreters import Interpreter

_DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONNOUSERSITE")
MESSAGE_LINES = 15


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    env.setdefault("PIP_ROOT_USER_ACTION", "ignore")  # pip's "running as root" warning: we install into a dir
    return env


@functools.lru_cache(maxsize=32)
def _has_pip(python: str) -> bool:
    try:
        return subprocess.run([python, "-m", "pip", "--version"], capture_output=True, timeout=60,
                              env=_environ(), stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def pip_command(requirements: list[str], interpreter: Interpreter, target: Path) -> list[str]:
    """The pip command line that installs ``requirements`` into ``target`` for ``interpreter``."""
    install = ["install", "--target", str(target), "--no-input", "--no-warn-script-location",
               "--disable-pip-version-check", "--", *requirements]
    if _has_pip(interpreter.path):
        return [interpreter.path, "-m", "pip", *install]
    return [sys.executable, "-m", "pip", "--python", interpreter.path, *install]


def find_uv() -> str | None:
    """The uv binary: on PATH, else the one the ``uv`` Python package ships."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return None


def uv_command(requirements: list[str], interpreter: Interpreter, target: Path) -> list[str]:
    """The uv command line that installs ``requirements`` into ``target`` for ``interpreter``."""
    uv = find_uv()
    if uv is None:
        raise EnvironmentBuildError("verifier.environment_installer is 'uv', but uv is not installed "
                                    "(pip install uv, or set environment_installer: pip)")
    return [uv, "pip", "install", "--python", interpreter.path, "--target", str(target), "--compile-bytecode",
            "--no-progress", "--", *requirements]


def install(requirements: list[str], interpreter: Interpreter, target: Path, timeout_s: float,
            installer: str = "pip") -> None:
    """Install into ``target`` (created by the installer); EnvironmentBuildError with its message."""
    command = uv_command(requirements, interpreter, target) if installer == "uv" else \
        pip_command(requirements, interpreter, target)
    tool = "uv" if installer == "uv" else "pip"
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout_s,
                              env=_environ(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EnvironmentBuildError(
            f"installing {', '.join(requirements)} for Python {interpreter.version} "
            f"took more than {timeout_s:.0f} s (verifier.environment_build_timeout_s)"
        ) from None
    except OSError as exc:
        raise EnvironmentBuildError(f"{tool} could not be started ({command[0]}): {exc}") from None
    if done.returncode != 0:
        said = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        errors = [i for i, line in enumerate(said) if line.startswith(("ERROR", "error:", "  × ", "  ╰─▶"))]
        said = said[errors[0]:] if errors else said  # the installer's verdict, not the warnings before it
        tail = "\n".join(said[-MESSAGE_LINES:]) or f"exit code {done.returncode}"
        raise EnvironmentBuildError(f"{tool} could not install {', '.join(requirements)} for Python "
                                    f"{interpreter.version} ({interpreter.path}): {tail}")
    if not target.is_dir():
        raise EnvironmentBuildError(f"{tool} reported success but installed nothing into {target}")


__all__ = ["find_uv", "install", "pip_command", "uv_command"]
