"""Helpers for environment tests and the environment-cache benchmark: real wheels built here.

Why build wheels: an environment test must install real distributions with real pip, yet must not
depend on a package index; ``pip wheel`` on a tiny source tree made in a temporary directory gives a
genuine wheel, and ``PIP_NO_INDEX`` + ``PIP_FIND_LINKS`` (the user's own pip configuration, the way
an offline machine sets it) make pip install it from there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def world_readable_dir(prefix: str) -> Path:
    """A fresh directory the sandbox user can read (pytest's tmp_path sits under a 700 directory)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    return path


def build_wheel(wheelhouse: Path, name: str, version: str, source: str) -> Path:
    """A pure-Python wheel of distribution ``name`` holding the module ``name.replace('-', '_')``
    with ``source``, built by ``pip wheel`` into ``wheelhouse``."""
    module = name.replace("-", "_")
    with tempfile.TemporaryDirectory(prefix="oracle-wheel-src-") as src:
        root = Path(src)
        (root / module).mkdir()
        (root / module / "__init__.py").write_text(source)
        (root / "pyproject.toml").write_text(
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
            f"[project]\nname = \"{name}\"\nversion = \"{version}\"\n\n"
            f"[tool.setuptools]\npackages = [\"{module}\"]\n")
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                               "--no-index", "-q", "-w", str(wheelhouse), str(root)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"pip wheel failed: {done.stderr[-2000:]}")
    wheels = sorted(wheelhouse.glob(f"{module}-{version}-*.whl"))
    assert wheels, f"no wheel for {name} {version} in {wheelhouse}"
    for w in wheelhouse.iterdir():
        w.chmod(0o644)
    return wheels[-1]


@contextmanager
def offline_pip(wheelhouse: Path) -> Iterator[None]:
    """pip, for the duration, installs only from ``wheelhouse`` (as a user's offline config would)."""
    saved = {k: os.environ.get(k) for k in ("PIP_NO_INDEX", "PIP_FIND_LINKS")}
    os.environ["PIP_NO_INDEX"] = "1"
    os.environ["PIP_FIND_LINKS"] = str(wheelhouse)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
