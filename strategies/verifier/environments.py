"""What a task's candidates run with: the interpreter, the read-only mounts, the ``sys.path`` of
each run, and the record of it that goes into provenance.

The order of precedence, first found: the task's ``environment``, else ``verifier.environment``
(the task's replaces the config's as a whole); inside it, ``python`` (a path, or a version looked
for among the interpreters the sandbox user can run), else ``verifier.python_executable``, else the
default search (oracle/sandbox/interpreters.py). Requirements are built into the environment cache
(oracle/sandbox/envcache.py) for that interpreter, once.

Every refusal says which setting it is about and why: ``InterpreterUnusable`` names the field, the
first directory the sandbox user cannot read and its mode, and the fix; ``EnvironmentBuildError``
carries pip's own message. Both fail the task (``status: failed``), never a candidate.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from oracle.config.model import VerifierConfig
from oracle.errors import EnvironmentBuildError, InterpreterUnusable
from oracle.sandbox import envbuild, interpreters
from oracle.sandbox.envcache import BuiltEnvironment, EnvironmentCache
from oracle.tasks.environment import Environment


@dataclass(frozen=True)
class RunEnvironment:
    """Everything a worker pool needs to run with an environment (part of the pool's key)."""

    python: str
    mounts: tuple[str, ...] = ()
    """Directories the sandbox mounts read-only (the interpreter's prefixes outside /usr, the built
    environment, node_modules)."""
    sys_path: tuple[str, ...] = ()
    """Put first on ``sys.path`` by each run, candidate and test side alike."""
    node_path: str | None = None
    record: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """What provenance says (``Execution.environment``)."""
    built: BuiltEnvironment | None = field(default=None, compare=False, hash=False)

    @property
    def key(self) -> tuple:
        return (self.python, self.mounts, self.sys_path, self.node_path)


def named(task_environment: Environment | None, cfg: VerifierConfig) -> tuple[Environment | None, str]:
    """The environment in force and where it was given (for messages and provenance)."""
    if task_environment is not None:
        return task_environment, "task.environment"
    if cfg.environment is not None:
        return cfg.environment, "verifier.environment"
    return None, "default"


def python_for(env: Environment | None, source: str, cfg: VerifierConfig) -> str:
    """The interpreter the sandbox runs for this environment; InterpreterUnusable with the reason."""
    if env is not None and env.python_path:
        why = interpreters.problem(env.python_path)
        if why:
            raise InterpreterUnusable(f"{source}.python: {why}; {interpreters.FIX}")
        return env.python_path
    if env is not None and env.python_version:
        found, refused = interpreters.find_version(env.python_version, os.environ.get("PATH"))
        if found is None:
            looked = "; ".join(refused) or "none installed in /usr/bin, /usr/local/bin or on PATH"
            raise InterpreterUnusable(f"{source}.python: no Python {env.python_version} the sandbox user can run "
                                      f"(refused: {looked}); install one where other users can read it, or "
                                      f"give {source}.python as an interpreter path")
        return found
    if cfg.python_executable:
        why = interpreters.problem(cfg.python_executable)
        if why:
            raise InterpreterUnusable(f"verifier.python_executable: {why}; {interpreters.FIX}")
        return cfg.python_executable
    found, refused = interpreters.find_default()
    if found is None:
        raise InterpreterUnusable("no Python interpreter the sandbox user can run (refused: "
                                  f"{'; '.join(refused)}); set verifier.python_executable to one it can read")
    return found


def cache_for(cfg: VerifierConfig) -> EnvironmentCache:
    return EnvironmentCache(cfg.environment_cache)


def prepare(env: Environment | None, source: str, cfg: VerifierConfig, python: str, *,
            build: bool = True) -> RunEnvironment:
    """The run environment: the interpreter's mounts, the built requirements (built now unless
    ``build`` is False: then EnvironmentBuildError when not built yet), node_modules."""
    started = time.monotonic()
    try:
        info = interpreters.describe(python)
    except OSError as exc:
        raise InterpreterUnusable(f"{python} does not run as a Python interpreter: {exc}") from None
    mounts = list(info.mounts)
    sys_path: list[str] = []
    record: dict[str, Any] = {"source": source, "python": python, "python_version": info.version}
    built = None
    if env is not None and env.requirements:
        requirements = env.normalized_requirements()
        cache = cache_for(cfg)
        if build:
            installer = cfg.environment_installer

            def install(reqs: list[str], interp: interpreters.Interpreter, target, timeout_s: float) -> None:
                envbuild.install(reqs, interp, target, timeout_s, installer)

            built = cache.ensure(requirements, info, install, cfg.environment_build_timeout_s, installer)
        else:
            built = cache.lookup(requirements, info)
            if built is None:
                raise EnvironmentBuildError(f"{source}.requirements: not built yet for Python {info.version} in "
                                            f"{cache.root} (run `oracle env build TASKFILE`)")
        mounts.append(built.path)
        sys_path.append(built.site_packages)
        record.update(built.record())
    node_path = None
    if env is not None and env.node_modules:
        if not os.path.isdir(env.node_modules):
            raise EnvironmentBuildError(f"{source}.node_modules: {env.node_modules} is not a directory")
        why = interpreters.unreadable(env.node_modules)
        if why:
            raise EnvironmentBuildError(f"{source}.node_modules: {why}; make it readable by other users or "
                                        "copy it somewhere they can read")
        mounts.append(os.path.realpath(env.node_modules))
        node_path = os.path.realpath(env.node_modules)
        record["node_modules"] = node_path
    record["seconds"] = round(time.monotonic() - started, 6)  # this evaluation's environment time
    return RunEnvironment(python=python, mounts=tuple(sorted(set(mounts))), sys_path=tuple(sys_path),
                          node_path=node_path, record=record, built=built)


__all__ = ["RunEnvironment", "cache_for", "named", "prepare", "python_for"]
