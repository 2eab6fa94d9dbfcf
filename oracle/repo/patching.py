"""Applying a candidate's change to its tree: a unified diff with ``git apply`` semantics, or whole files.

Why it looks like this:
- **The real ``git apply``**, run on the host in the safe environment of _git.py, because that is
  what "applies" means to the people writing the patches (SWE-bench grades the same way): all
  hunks or none, exact context, renames, mode changes, binary patches. Nothing of the user's git
  setup applies, and it runs before any candidate code has run in the tree.
- **Paths checked first.** Every name the diff's headers carry (``---``/``+++``, ``rename``/``copy``
  lines, the ``diff --git`` line) is read by our own parser and must be relative, without ``..``,
  outside ``.git``, with no symbolic link on the way in the tree; a diff that creates or retargets
  a link (mode 120000) is refused. git's own reading of the diff (``--numstat``) must name nothing
  our parser did not see, so the two readers cannot disagree about where the patch writes.
- **The base never changes.** Tree files are hardlinks of the base snapshot's; each file the
  patch touches is replaced by a private copy before git runs (git itself writes a new file too),
  so the base keeps its content and its link count.
- **Reasons a user can act on**: "hunk 2 of src/x.py does not apply (at line 9)", "src/y.py: no
  such file to patch", "patch is not a unified diff". A patch that does not apply is the
  candidate's failure with that reason, never our error.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from oracle.errors import RepositoryError
from oracle.repo import _fs
from oracle.repo._git import message, run_git


@dataclass(frozen=True)
class Applied:
    """What applying a candidate's change did."""

    ok: bool
    reason: str | None = None
    """Why it was not applied, for a user ("hunk 2 of src/x.py does not apply (at line 9)")."""
    paths: list[str] = field(default_factory=list)
    """The tree paths written or removed (sorted; renamed files under both names)."""
    refused: bool = False
    """True when refused for safety (a path leaving the tree, a link, ``.git``) rather than for not applying."""


class _Refused(Exception):
    pass


# -- reading the diff's headers ----------------------------------------------------------------

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_LINK_MODE = re.compile(r"^(?:new file mode|new mode) 120000\s*$|^index [0-9a-f]+\.\.[0-9a-f]+ 120000\s*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


def _unquote(text: str) -> str:
    """A name as git writes it in a header: C-quoted ("a/sp\\303\\251 x") or bare (up to a tab)."""
    if not text.startswith('"'):
        return text.split("\t", 1)[0].rstrip("\r")
    out, i = bytearray(), 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            break
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch(r"[0-7]{3}", text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
                continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(name: str) -> str | None:
    """The tree path of a ``---``/``+++`` name (git's default ``-p1``); None for /dev/null."""
    if name == "/dev/null":
        return None
    if name.startswith("/"):
        return name  # refused by the path check
    return name.split("/", 1)[1] if "/" in name else name


def _git_line_names(rest: str) -> list[str]:
    """Both names of a ``diff --git a/X b/Y`` line (quoted or not; a space in a bare name makes
    the split ambiguous, so every candidate split is returned: more names checked, never fewer)."""
    if rest.startswith('"'):
        first = _unquote(rest)
        end = rest.find('" ', 1)
        second = _unquote(rest[end + 2:]) if end > 0 else ""
        return [n for n in (_strip_prefix(first), _strip_prefix(second)) if n]
    names = []
    for m in re.finditer(r" (?=b/|\")", rest):
        left, right = rest[:m.start()], rest[m.start() + 1:]
        names += [n for n in (_strip_prefix(left), _strip_prefix(_unquote(right))) if n]
    return names or [n for n in (_strip_prefix(rest),) if n]


@dataclass
class _Header:
    names: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    hunks: dict[str, list[int]] = field(default_factory=dict)
    """Per path, each hunk's old start line, in order (hunk k is hunks[path][k - 1])."""


def read_header(patch: str) -> _Header:
    """The names, link modes and hunk starts of every file section of ``patch`` (see module docstring)."""
    head = _Header()
    current: list[str] = []
    old: str | None = None
    section: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            section = list(dict.fromkeys(_git_line_names(line[len("diff --git "):])))
            head.names.update(section)
            current, old = section, None
        elif line.startswith("--- "):
            old = _strip_prefix(_unquote(line[4:]))
            if old:
                head.names.add(old)
        elif line.startswith("+++ "):
            new = _strip_prefix(_unquote(line[4:]))
            if new:
                head.names.add(new)
            current = list(dict.fromkeys(n for n in (old, new) if n)) or section
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            name = _unquote(line.split(" ", 2)[2])
            head.names.add(name)
            section = list(dict.fromkeys([*section, name]))
            current = section
        elif _LINK_MODE.match(line):
            head.links.append(current[-1] if current else "?")
        else:
            m = _HUNK.match(line)
            if m:
                for name in current:
                    head.hunks.setdefault(name, []).append(int(m.group(1)))
    return head


def _git_names(patch: bytes, where: Path) -> tuple[list[str] | None, str | None]:
    """git's own list of the paths ``patch`` writes (``--numstat -z``), or why it cannot read it."""
    done = run_git(["apply", "--numstat", "-z", "-"], cwd=where, input=patch)
    if done.returncode != 0:
        return None, _reason(message(done), _Header())
    names = []
    for record in done.stdout.split(b"\0"):
        if record:
            parts = record.split(b"\t", 2)
            if len(parts) == 3 and parts[2]:
                names.append(os.fsdecode(parts[2]))
    return names, None


def _check_name(tree: Path | None, name: str, *, link_at_name: bool = False) -> None:
    """``_Refused`` unless ``name`` stays in the tree, outside ``.git``, with no link on the way
    (nor at ``name`` itself unless ``link_at_name``: a whole new file replaces a link, a patch
    would edit what it points to)."""
    try:
        parts = _fs.parts_of(name)
    except _fs.UnsafePath as exc:
        raise _Refused(f"{exc}: refused") from None
    if any(p.lower() == ".git" for p in parts):
        raise _Refused(f"{name}: a patch may not write inside .git")
    if tree is None:
        return
    try:
        found = _fs.lstat(tree, name)
    except _fs.LinkInPath as exc:
        raise _Refused(f"{name}: writes through the symbolic link {exc.link}") from None
    if not link_at_name and found is not None and stat.S_ISLNK(found.st_mode):
        raise _Refused(f"{name}: is a symbolic link in the tree; a patch may not write through it")


def _prepare(patch: str, tree: Path | None, scratch: Path) -> tuple[bytes, _Header, list[str]]:
    """The patch's bytes, headers and touched paths, checked (``_Refused`` / ``ValueError``)."""
    text = patch if patch.endswith("\n") else patch + "\n"
    raw = text.encode("utf-8", "surrogateescape")
    head = read_header(text)
    git_names, problem = _git_names(raw, scratch)
    if problem is not None:
        raise ValueError(problem)
    assert git_names is not None
    if head.links:
        raise _Refused(f"{head.links[0]}: the patch creates a symbolic link (mode 120000); refused")
    for name in sorted(head.names):
        _check_name(tree, name)
    unseen = [n for n in git_names if n not in head.names]
    if unseen:
        raise _Refused(f"{unseen[0]}: the patch's headers name paths git reads differently; refused")
    return raw, head, sorted(head.names)


# -- applying --------------------------------------------------------------------------------------

def apply_patch(tree: str | Path, patch: str) -> Applied:
    """Apply the unified diff ``patch`` to ``tree`` (all of it or nothing; see module docstring).
    An empty patch applies and changes nothing."""
    tree = Path(tree)
    if not patch.strip():
        return Applied(ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="oracle-patch-"))
    try:
        try:
            raw, head, names = _prepare(patch, tree, scratch)
        except _Refused as exc:
            return Applied(ok=False, reason=str(exc), refused=True)
        except ValueError as exc:
            return Applied(ok=False, reason=str(exc))
        for name in names:
            _break_link(tree, name)
        done = run_git(["apply", "--whitespace=nowarn", "-"], cwd=tree, input=raw)
        if done.returncode != 0:
            reason = _reason(message(done), head)
            return Applied(ok=False, reason=reason, refused="symbolic link" in reason or "invalid path" in reason)
        for name in names:
            found = _fs.lstat(tree, name)
            if found is not None and stat.S_ISLNK(found.st_mode):
                return Applied(ok=False, reason=f"{name}: the patch made a symbolic link; refused", refused=True)
        return Applied(ok=True, paths=names)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def apply_files(tree: str | Path, files: dict[str, str | bytes]) -> Applied:
    """Write each ``path -> new content`` into ``tree`` (new files, 0644; parents made as needed),
    after checking every path as :func:`apply_patch` does. Nothing is written when one is refused."""
    tree = Path(tree)
    try:
        for name in files:
            _check_name(tree, name, link_at_name=True)
            found = _fs.lstat(tree, name)
            if found is not None and stat.S_ISDIR(found.st_mode):
                raise _Refused(f"{name}: is a directory in the tree")
            parts = name.split("/")
            for i in range(1, len(parts)):
                above = _fs.lstat(tree, "/".join(parts[:i]))
                if above is not None and not stat.S_ISDIR(above.st_mode):
                    return Applied(ok=False, reason=f"{name}: {'/'.join(parts[:i])} is a file in the tree")
    except _Refused as exc:
        return Applied(ok=False, reason=str(exc), refused=True)
    for name, content in files.items():
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        old = _fs.lstat(tree, name)
        mode = 0o755 if old is not None and stat.S_ISREG(old.st_mode) and old.st_mode & 0o100 else 0o644
        _fs.write_file(tree, name, data, mode)
    return Applied(ok=True, paths=sorted(files))


def apply_to_copy(base_tree: Path, patch: str, *, field: str) -> dict[str, tuple[bytes, int] | None]:
    """Apply ``patch`` (the task's test patch) to a private copy of the base files it touches and
    return path -> (content, mode), None where it deletes the file. The copy lives in a 0700
    temporary directory removed at once: the patch is never left where a candidate could read it.
    ``RepositoryError`` naming ``field`` when it does not apply to the base."""
    if not patch.strip():
        return {}
    scratch = Path(tempfile.mkdtemp(prefix="oracle-test-patch-"))
    try:
        work = scratch / "tree"
        work.mkdir()
        try:
            raw, head, names = _prepare(patch, base_tree, scratch)
        except (_Refused, ValueError) as exc:
            raise RepositoryError(f"{field}: {exc}") from None
        for name in names:
            entry = _fs.read_entry(base_tree, name)
            if entry is not None and entry[0] == "file":
                _fs.write_file(work, name, entry[1], entry[2])
        done = run_git(["apply", "--whitespace=nowarn", "-"], cwd=work, input=raw)
        if done.returncode != 0:
            raise RepositoryError(f"{field}: {_reason(message(done), head)} at the base commit")
        out: dict[str, tuple[bytes, int] | None] = {}
        for name in names:
            entry = _fs.read_entry(work, name)
            if entry is None:
                out[name] = None
            elif entry[0] == "file":
                out[name] = (entry[1], entry[2])
            else:
                raise RepositoryError(f"{field}: {name}: the patch leaves a {entry[0]}, not a file")
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _break_link(tree: Path, name: str) -> None:
    """Replace a file shared with the base (link count above one) by a private copy of it."""
    entry = _fs.lstat(tree, name)
    if entry is None or not stat.S_ISREG(entry.st_mode) or entry.st_nlink < 2:
        return
    found = _fs.read_entry(tree, name)
    if found is not None and found[0] == "file":
        _fs.write_file(tree, name, found[1], found[2])


_PATCH_FAILED = re.compile(r"patch failed: (.+):(\d+)$")


def _reason(text: str, head: _Header) -> str:
    """git apply's message as a reason a user reads (see module docstring)."""
    lines = [part.strip() for part in text.split("; ") if part.strip()]
    for line in lines:
        m = _PATCH_FAILED.match(line)
        if m:
            path, start = m.group(1), int(m.group(2))
            starts = head.hunks.get(path, [])
            if start in starts:
                return f"hunk {starts.index(start) + 1} of {path} does not apply (at line {start})"
            return f"a hunk of {path} does not apply (at line {start})"
    for line in lines:
        if line.startswith("No valid patches in input"):
            return "patch is not a unified diff"
        m = re.match(r"corrupt patch at line (\d+)", line)
        if m:
            return f"patch is not a unified diff (corrupt at line {m.group(1)})"
        if "lacks filename information" in line or line.startswith(("patch fragment without header",
                                                                      "patch with only garbage")):
            return f"patch is not a unified diff ({line})"
        m = re.match(r"(.+): No such file or directory$", line)
        if m:
            return f"{m.group(1)}: no such file to patch"
        m = re.match(r"(.+): already exists in working directory$", line)
        if m:
            return f"{m.group(1)}: already exists (the patch creates it)"
        m = re.match(r"affected file '(.+)' is beyond a symbolic link$", line)
        if m:
            return f"{m.group(1)}: writes through a symbolic link; refused"
        m = re.match(r"invalid path '(.+)'$", line)
        if m:
            return f"{m.group(1)}: invalid path; refused"
    return lines[0] if lines else "git apply failed"
