"""Task input from stdin: ``oracle evaluate -`` (or ``/dev/stdin``, or any pipe) and ``oracle batch -``.

Why sniffed and not named by a flag: a pipe has no file name to take the format from, and the three
formats are told apart by their first lines (JSON starts with ``{`` or ``[``, JSONL is one JSON
object per line, anything else is YAML). A named file keeps its suffix rule: ``x.yaml`` is YAML
even when its text is JSON.
"""

from __future__ import annotations

import contextlib
import json
import stat
import sys
from pathlib import Path
from typing import BinaryIO, Iterator

STDIN = "-"
STDIN_NAME = "<stdin>"
_KNOWN = (".json", ".yaml", ".yml", ".jsonl")


def is_stdin(name: str) -> bool:
    """``-``, or a path with no task suffix that is a device (``/dev/stdin``, ``/dev/fd/N`` from
    ``<(...)``) or a pipe or a terminal rather than a regular file."""
    if name == STDIN:
        return True
    path = Path(name)
    if path.suffix.lower() in _KNOWN:
        return False
    if name.startswith(("/dev/", "/proc/")):  # /dev/stdin is a regular file when stdin is redirected from one
        return path.exists()
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _stream(name: str) -> BinaryIO:
    return sys.stdin.buffer if name == STDIN else open(name, "rb")  # closed by the caller


def read_input(name: str, max_bytes: int) -> bytes:
    """The whole input, refused past ``max_bytes`` (limits.max_file_bytes) without reading on."""
    from oracle.errors import TaskValidationError

    fh = _stream(name)
    try:
        raw = fh.read(max_bytes + 1)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if len(raw) > max_bytes:
        raise TaskValidationError(f"input is more than {max_bytes} bytes (limits.max_file_bytes); "
                                  "write it to a .jsonl file and run `oracle batch` on it", field="(file)",
                                  source=STDIN_NAME)
    return raw


def sniff_suffix(raw: bytes) -> str:
    """``.json``, ``.jsonl`` or ``.yaml``: what the text looks like (see the module docstring)."""
    text = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] not in (b"{", b"["):
        return ".yaml"
    try:
        json.loads(text)
        return ".json"
    except ValueError:
        pass
    first = text.split(b"\n", 1)[0]
    try:
        return ".jsonl" if isinstance(json.loads(first), dict) else ".json"
    except ValueError:
        return ".json"  # JSON with a mistake: the JSON reader names the line


def load_stdin_tasks(name: str, limits: object) -> list:
    """The tasks of stdin (or a pipe path), as ``load_tasks`` would read them from a file."""
    from oracle.tasks.files import load_task_bytes

    raw = read_input(name, limits.max_file_bytes)  # type: ignore[attr-defined]
    return load_task_bytes(raw, suffix=sniff_suffix(raw), source=STDIN_NAME, limits=limits)  # type: ignore[arg-type]


def load_task_file(name: str, limits: object) -> list:
    """A task file by name, or stdin for ``-`` and pipes."""
    from oracle.tasks.files import load_tasks

    return load_stdin_tasks(name, limits) if is_stdin(name) else load_tasks(name, limits=limits)  # type: ignore[arg-type]


@contextlib.contextmanager
def spooled_jsonl(name: str) -> Iterator[str]:
    """A JSONL input that may be stdin, as a path a batch can read twice (it counts the lines, then
    runs them): stdin is copied to ``stdin.jsonl`` in a temporary directory, removed afterwards.
    Rows resume by the content of each line, so a rerun fed the same lines resumes."""
    import tempfile

    if not is_stdin(name):
        yield name
        return
    with tempfile.TemporaryDirectory(prefix="oracle-stdin-") as tmp:
        path = Path(tmp) / "stdin.jsonl"
        fh = _stream(name)
        try:
            with path.open("wb") as out:
                while chunk := fh.read(1 << 20):
                    out.write(chunk)
        finally:
            if fh is not sys.stdin.buffer:
                fh.close()
        yield str(path)
