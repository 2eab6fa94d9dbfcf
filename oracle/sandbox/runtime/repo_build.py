"""An editable install of the tree in the cwd, into TARGET, by the tree's own build backend (PEP 660).

Why not ``pip install -e``: pip refuses ``--target`` for editable installs, and the sandbox needs
neither pip's resolver nor its network code. This calls the backend's ``build_editable`` hook (the
backend and its requirements come from the task's environment or the interpreter: no build
isolation, no download), then unpacks the wheel's top level (the ``.pth`` or finder module the
backend made, the metadata) into TARGET, refusing any member that would land outside it.

It runs as a child of the bootstrap with the tree as cwd: this is the candidate's code (its
``setup.py``, its backend configuration) and holds nothing of the report channel.

Usage: ``python -I repo_build.py TARGET SYS_PATH_JSON``. Kept to Python 3.8 syntax.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import zipfile

LEGACY = "setuptools.build_meta:__legacy__"


def _build_system() -> tuple[str, list[str]]:
    if not os.path.isfile("pyproject.toml"):
        return LEGACY, []
    with open("pyproject.toml", "rb") as fh:
        data = fh.read()
    try:
        import tomllib
    except ImportError:  # before Python 3.11: the two keys this needs, read plainly
        text = data.decode("utf-8", "replace")
        backend = re.search(r"^\s*build-backend\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
        paths = re.search(r"^\s*backend-path\s*=\s*\[([^\]]*)\]", text, re.M)
        return (backend.group(1) if backend else LEGACY,
                re.findall(r"[\"']([^\"']+)[\"']", paths.group(1)) if paths else [])
    system = tomllib.loads(data.decode("utf-8")).get("build-system", {})
    return system.get("build-backend", LEGACY), list(system.get("backend-path", []))


def _backend(name: str):
    module, _, attrs = name.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, attrs.split(".")):
        obj = getattr(obj, part)
    return obj


def _unpack(wheel: str, target: str) -> None:
    root = os.path.realpath(target)
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if name.split("/")[0].endswith(".data"):
                continue  # scripts and headers: not needed to import the package
            dest = os.path.realpath(os.path.join(root, name))
            if not dest.startswith(root + os.sep):
                raise SystemExit(f"the editable wheel's member {name!r} would land outside the target")
            if name.endswith("/"):
                os.makedirs(dest, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with zf.open(info) as fin, open(dest, "wb") as fout:
                fout.write(fin.read())


def main() -> None:
    target, sys_path = sys.argv[1], json.loads(sys.argv[2])
    sys.path[0:0] = list(sys_path)
    name, backend_path = _build_system()
    sys.path[0:0] = [os.path.abspath(p) for p in backend_path]
    sys.path.insert(0, os.getcwd())  # as a PEP 517 frontend runs the backend: setup.py imports its siblings
    try:
        backend = _backend(name)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"the build backend {name!r} is not importable here: {exc} (add it to the environment)")
    hook = getattr(backend, "build_editable", None)
    if hook is None:
        raise SystemExit(f"the build backend {name!r} has no build_editable hook (PEP 660)")
    out = tempfile.mkdtemp(prefix="editable-wheel-")
    wheel = hook(out)
    _unpack(os.path.join(out, wheel), target)
    print(f"editable install of {os.getcwd()} by {name}: {wheel}")


if __name__ == "__main__":
    main()
