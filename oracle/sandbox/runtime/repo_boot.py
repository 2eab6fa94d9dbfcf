"""The first code of a repository test run inside the sandbox: take the report channel, then run.

Order matters, and is the defence: (1) read the run's settings and secret from stdin (the host wrote
them and closed it: nothing later can read them again); (2) move the report pipe to a fresh,
close-on-exec descriptor and make the process non-dumpable, so a child (an editable build, a test's
subprocess) can neither inherit it nor open it through ``/proc/<pid>/fd``; (3) import pytest before
any directory of the tree is on ``sys.path``, so a ``pytest/`` or ``pluggy/`` in the tree cannot
stand in for it; (4) only then the editable build (a child process, the tree's own build backend)
and the tree's import paths; (5) pytest with the report plugin registered before any conftest
loads; (6) the exit status reported and the process ended with ``os._exit`` so no ``atexit`` hook
of the candidate can change it.

Usage (the host builds it): ``python -I repo_boot.py SRC WORK REPO`` with a JSON object on stdin.
The tests (and an editable build) run in REPO, or in its ``subdir``; ``pythonpath`` is relative to REPO.
Kept to Python 3.8 syntax: it runs on the task's interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _nondumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<pid>/fd is root's now
    except Exception:  # noqa: BLE001 - without ctypes the inherited-fd defence still holds
        pass


def _load(path: str):
    """The report module from its file (this script runs alone, not as part of the runtime package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("oracle_repo_report", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]  # a .py file always has a spec
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _pth_paths(site_dir: str) -> list[str]:
    """The directories the .pth files in ``site_dir`` name (read as ``site`` reads them; not run)."""
    found = []
    for name in sorted(os.listdir(site_dir)):
        if not name.endswith(".pth"):
            continue
        with open(os.path.join(site_dir, name), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    path = os.path.normpath(os.path.join(site_dir, line))
                    if os.path.isdir(path) and path not in found:
                        found.append(path)
    return found


def _environment_plugins(paths: list, repo: str) -> list:
    """The modules of the ``pytest11`` entry points the environment's own distributions declare (on
    ``paths``: the interpreter's and the environment's, read-only, none in the tree), imported now.

    Why not pytest's autoload: it finds entry points on all of ``sys.path``, which later holds the
    tree and an editable install's metadata, both the candidate's: its own ``pytest11`` entry point
    (setup.py's ``entry_points``, a ``*.dist-info`` in the tree) would load as a plugin before any
    test. So autoload is off and the environment's plugins (pytest-asyncio and the like, which a
    task may need) are handed to pytest here instead. An entry point named like one already taken is
    skipped, as pytest does."""
    from importlib import metadata

    root = os.path.realpath(repo) + os.sep
    own = [p for p in paths if p and not (os.path.realpath(p) + os.sep).startswith(root)]
    seen, modules = set(), []
    for dist in metadata.distributions(path=own):
        for ep in dist.entry_points:
            if ep.group != "pytest11" or ep.name in seen:
                continue
            seen.add(ep.name)
            modules.append((ep.name, ep.load()))
    return modules


class _EnvironmentPlugins:
    """Registers the environment's plugins under their entry-point names, as pytest's autoload
    does: ``-p no:NAME`` in the test configuration still disables one."""

    def __init__(self, plugins: list) -> None:
        self._plugins = plugins

    def pytest_addhooks(self, pluginmanager) -> None:
        for name, module in self._plugins:
            if not pluginmanager.is_blocked(name) and pluginmanager.get_plugin(name) is None:
                pluginmanager.register(module, name)


def _tail(data: bytes, limit: int = 4000) -> str:
    return data.decode("utf-8", "replace")[-limit:]


def _editable(src: str, work: str, repo: str, settings: dict, channel) -> str | None:
    """Run the tree's build backend (PEP 660 ``build_editable``) in a child; the site dir it made."""
    target = os.path.join(work, "editable")
    os.makedirs(target, exist_ok=True)
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-I", os.path.join(src, "repo_build.py"), target,
                               json.dumps(settings.get("sys_path", []))],
                              cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=float(settings.get("build_timeout_s", 300)), close_fds=True)
        ok, tail = proc.returncode == 0, _tail(proc.stdout)
    except subprocess.TimeoutExpired as exc:
        ok, tail = False, _tail(exc.output or b"") + f"\nthe editable build took longer than {exc.timeout:g}s"
    channel.send("build", ok=ok, tail=tail, seconds=round(time.monotonic() - started, 3))
    return target if ok else None


def main() -> None:
    src, work, repo = sys.argv[1:4]
    settings = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    fd = os.dup(int(settings["fd"]))  # non-inheritable by default
    os.close(int(settings["fd"]))
    _nondumpable()
    report = _load(os.path.join(src, "repo_report.py"))  # our file, read-only at SRC; SRC never on sys.path
    channel = report.Channel(fd, bytes.fromhex(settings.pop("key")))
    del settings["fd"]
    if settings.get("pytest_path"):
        sys.path.insert(0, settings["pytest_path"])
    env_path = list(settings.get("sys_path", []))
    sys.path[1 if settings.get("pytest_path") else 0:0] = env_path
    env_plugins = []
    if settings["mode"] == "pytest":
        # Never pytest's own autoload (it would find the candidate's entry points too): the
        # environment's plugins, when it is the environment's pytest, are loaded here, before any
        # directory of the tree is on sys.path.
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        import pytest
        import _pytest.config
        import _pytest.runner  # noqa: F401
        if settings.get("plugin_autoload"):
            env_plugins = _environment_plugins(list(sys.path), repo)
    tree_paths = [os.path.normpath(os.path.join(repo, p)) for p in settings.get("pythonpath", ["."])]
    run_dir = os.path.normpath(os.path.join(repo, settings.get("subdir") or "."))  # a monorepo's package
    os.chdir(run_dir)
    site_dir = None
    if settings.get("install") == "editable":
        site_dir = _editable(src, work, run_dir, settings, channel)
        if site_dir is None:
            channel.send("exit", code=3)
            os._exit(3)
    # A child process (a custom command, a test's subprocess) gets the same paths; of an editable
    # install, the directories its .pth files name (their import lines, finder hooks, only run in-process).
    site_paths = ([site_dir] + _pth_paths(site_dir)) if site_dir else []
    os.environ["PYTHONPATH"] = os.pathsep.join(tree_paths + site_paths + env_path)
    if settings["mode"] == "command":
        channel.send("exec", command=settings["command"], started=time.time())
        os.execvpe(settings["command"][0], settings["command"], dict(os.environ))
    first = 1 if settings.get("pytest_path") else 0
    sys.path[first:first] = tree_paths
    if site_dir:
        import site

        before = list(sys.path)
        site.addsitedir(site_dir)  # its .pth files: what the tree's build backend wrote
        added = [p for p in sys.path if p not in before]
        for p in added:
            sys.path.remove(p)
        at = first + len(tree_paths)
        sys.path[at:at] = added
    import pytest

    plugins = [report.ReportPlugin(channel, settings.get("select")), _EnvironmentPlugins(env_plugins)]
    code = pytest.main(list(settings["args"]), plugins=plugins)
    code = int(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a test may have closed them
        pass
    channel.send("exit", code=code)
    os._exit(code)


if __name__ == "__main__":
    main()
