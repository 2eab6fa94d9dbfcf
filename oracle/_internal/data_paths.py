"""Where the shared data lives (HumanEval, the dev suite, LLMBar...): one rule for every caller.

The directory is, first found wins:

1. an explicit path (a ``--data PATH`` option of the command or benchmark);
2. the ``ORACLE_DATA_DIR`` environment variable;
3. ``shared/data`` beside the checkout, i.e. ``../shared/data`` relative to the repository root.

The data is not part of the package, so no path is hard-coded anywhere: a clean checkout next to a
copy of the data works, and a missing file is reported with the path that was looked at, where that
path came from, and how to point elsewhere. Tests use the ``shared_data`` fixture (tests/plugins/
shared_data.py), which skips on a developer machine without the data but fails under CI.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "DataNotFound", "default_data_dir", "shared_data_dir", "shared_data_file"]

DATA_ENV = "ORACLE_DATA_DIR"
_REPO_ROOT = Path(__file__).resolve().parents[2]


class DataNotFound(FileNotFoundError):
    """The shared data directory, or a file expected in it, is not there.

    A ``FileNotFoundError`` (not an ``OracleError``): the data belongs to benchmarks, examples and
    tests, never to an evaluation. ``path`` is what was looked for, ``source`` where the directory
    came from (``--data``, ``$ORACLE_DATA_DIR`` or the default)."""

    def __init__(self, message: str, *, path: Path, source: str) -> None:
        super().__init__(message)
        self.path = path
        self.source = source


def default_data_dir() -> Path:
    """``../shared/data`` relative to the repository root (the checkout this package runs from)."""
    return _REPO_ROOT.parent / "shared" / "data"


def _locate(explicit: str | os.PathLike[str] | None) -> tuple[Path, str]:
    if explicit is not None and str(explicit) != "":
        return Path(explicit), "--data"
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env), f"${DATA_ENV}"
    return default_data_dir(), "the default ../shared/data beside the checkout"


def shared_data_dir(explicit: str | os.PathLike[str] | None = None, *,
                    required: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """The shared data directory, resolved; raises ``DataNotFound`` naming what is missing.

    ``required``: paths relative to the directory that must exist (files or folders), checked now
    so that a benchmark fails before it has spent any time, with every missing path listed."""
    path, source = _locate(explicit)
    path = path.expanduser().resolve()
    hint = f"pass --data PATH or set {DATA_ENV}"
    if not path.is_dir():
        raise DataNotFound(f"shared data directory not found: {path} (from {source}); {hint}",
                           path=path, source=source)
    missing = [str(path / p) for p in required if not (path / p).exists()]
    if missing:
        raise DataNotFound(f"shared data incomplete in {path} (from {source}): missing "
                           f"{', '.join(missing)}; {hint}", path=Path(missing[0]), source=source)
    return path


def shared_data_file(relative: str | os.PathLike[str], explicit: str | os.PathLike[str] | None = None) -> Path:
    """One path inside the shared data directory, which must exist (``DataNotFound`` otherwise)."""
    return shared_data_dir(explicit, required=(relative,)) / relative
