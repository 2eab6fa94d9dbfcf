"""Rubric drafts and releases as plain files in a directory, readable in a diff.

Layout, per rubric ``NAME`` under the store root (default ``.oracle/rubrics``)::

    NAME/draft.yaml        the only editable file (YAML or JSON content of a RubricContent)
    NAME/v1.json           release 1: content, content hash, evidence, gate results (never edited)
    NAME/index.json        sha256 of every release file's bytes, the ``current`` pointer and the
                           history of pointer moves (promote / rollback only touch this file)

Tamper detection: loading a release recomputes the sha256 of its file and the content hash of its
content, and refuses the release when either differs from what ``index.json`` recorded. This
catches edits to a released file; someone who can rewrite both files can forge anything, which is
why every result also carries the content hash it was judged with.

Writes go through a temporary file and ``os.replace`` so a crash never leaves half a file.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from oracle.rubrics.errors import RubricError, RubricEvidenceTooSmall, RubricGateFailed, RubricTampered
from oracle.rubrics.gates import Gate, evaluate_gates
from oracle.rubrics.index import check_index
from oracle.rubrics.model import Evidence, Release, RubricContent, RubricRef, MAX_VERSION, check_name, parse_version

DEFAULT_ROOT = Path(".oracle") / "rubrics"
DEFAULT_MIN_EVIDENCE_ITEMS = 20


def _atomic_write(path: Path, text: str) -> None:
    """``write_atomic`` (a planted link is never written through), a failure as a RubricError."""
    from oracle._internal.safe_files import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise RubricError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _load(text: str) -> Any:
    """YAML (a superset of JSON) through the project's bounded loader: no tags, few aliases,
    bounded expansion; then the checks every input gets (huge integers, lone surrogates)."""
    from oracle._internal.decoded import input_problem
    from oracle.tasks._limits import DEFAULT_LIMITS
    from oracle._internal.safe_yaml import load_yaml

    data = load_yaml(text, max_aliases=DEFAULT_LIMITS.max_yaml_aliases, max_depth=DEFAULT_LIMITS.max_depth,
                     max_expanded_bytes=DEFAULT_LIMITS.max_expanded_bytes)
    problem = input_problem(data, DEFAULT_LIMITS.max_depth)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    return data


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "(rubric)"
    return f"{where}: {err['msg']}"


def _parse(text: str, source: str) -> dict[str, Any]:
    try:
        data = _load(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the file's fault, named
        raise RubricError(f"{source}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RubricError(f"{source}: a rubric is a mapping (criteria, questions, ...)")
    return data


def _validate(data: dict[str, Any], source: str) -> RubricContent:
    try:
        return RubricContent.model_validate(data)
    except ValidationError as exc:
        raise RubricError(f"{source}: {_first_error(exc)}") from None


def parse_content(text: str, source: str) -> RubricContent:
    """Parse a draft (YAML or JSON; duplicate keys refused by the project's safe loader)."""
    return _validate(_parse(text, source), source)


def content_from_task_file(path: Path) -> RubricContent:
    """The rubric part of a task file (its criteria and questions), or a rubric file, for
    ``rubric new --from``; the file is read and parsed once."""
    data = _parse(_read_text(path), str(path))
    if isinstance(data.get("task"), dict):
        data = {k: data["task"][k] for k in ("criteria", "questions") if k in data["task"]}
    return _validate(data, str(path))


def _read_text(path: Path) -> str:
    """A draft or source file's text; unreadable or not UTF-8 is a ``RubricError`` naming it."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise RubricError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise RubricError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _dump_draft(content: RubricContent) -> str:
    import yaml

    data = content.model_dump(mode="json", exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


class RubricStore:
    """One directory of rubrics; every method reads the files afresh (no state in memory)."""

    def __init__(self, root: str | Path | None = None, *, gates: list[Gate] | None = None,
                 min_evidence_items: int = DEFAULT_MIN_EVIDENCE_ITEMS) -> None:
        self.root = Path(root) if root is not None else DEFAULT_ROOT
        self.gates = list(gates or [])
        self.min_evidence_items = min_evidence_items

    # -- paths ---------------------------------------------------------------------------
    def _dir(self, name: str) -> Path:
        try:
            check_name(name)
        except ValueError as exc:
            raise RubricError(str(exc)) from None
        return self.root / name

    def draft_path(self, name: str) -> Path:
        return self._dir(name) / "draft.yaml"

    def _index_path(self, name: str) -> Path:
        return self._dir(name) / "index.json"

    def _release_path(self, name: str, version: int) -> Path:
        return self._dir(name) / f"v{version}.json"

    # -- drafts --------------------------------------------------------------------------
    def new(self, name: str, content: RubricContent | None = None) -> Path:
        """Create ``NAME/draft.yaml``; refuses to overwrite an existing draft."""
        path = self.draft_path(name)
        if path.exists():
            raise RubricError(f"rubric {name!r} already has a draft: {path}")
        content = content or RubricContent(criteria=[{"criterion": "Describe what a good answer does."}])  # type: ignore[list-item]
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, _dump_draft(content))
        return path

    def draft(self, name: str) -> RubricContent:
        path = self.draft_path(name)
        if not path.exists():
            raise RubricError(f"rubric {name!r} has no draft ({path})")
        return parse_content(_read_text(path), str(path))

    # -- index ---------------------------------------------------------------------------
    def _index(self, name: str) -> dict[str, Any]:
        path = self._index_path(name)
        if not path.exists():
            return {"current": None, "versions": {}, "pointer_history": []}
        return check_index(path)

    def _write_index(self, name: str, index: dict[str, Any]) -> None:
        _atomic_write(self._index_path(name), json.dumps(index, indent=2, sort_keys=True) + "\n")

    def names(self) -> list[str]:
        """The rubrics in the store: directories whose name is a valid rubric name (anything
        else in the directory, a look-alike or undecodable name among them, is not a rubric)."""
        from oracle.rubrics.model import NAME_RE

        if not self.root.is_dir():
            return []
        try:
            entries = list(self.root.iterdir())
        except OSError as exc:
            raise RubricError(f"rubric store {self.root}: cannot list: {exc.strerror}") from None
        return sorted(p.name for p in entries if NAME_RE.fullmatch(p.name) and p.is_dir() and not p.is_symlink())

    def versions(self, name: str) -> list[int]:
        return sorted(int(v) for v in self._index(name)["versions"])

    def current(self, name: str) -> int | None:
        cur = self._index(name)["current"]
        return int(cur) if cur is not None else None

    # -- releases ------------------------------------------------------------------------
    def release(self, name: str, evidence: Evidence, *, force: bool = False,
                now: _dt.datetime | None = None) -> Release:
        """Freeze the draft as the next version, if the evidence is for this draft and passes.

        A draft whose content is the latest release's is not released again: that release is
        returned (``unchanged`` says so first). The evidence must name the draft's content hash
        and have answered at least ``min_evidence_items`` items (RubricEvidenceTooSmall, which
        ``force`` does not pass); failing gates refuse the release (RubricGateFailed names the
        metric) unless ``force``, which is recorded in the release."""
        from oracle._internal.version import __version__

        content = self.draft(name)
        digest = content.content_hash()
        same = self.unchanged(name)
        if same is not None:
            return self.load(name, same)
        if evidence.rubric_hash != digest:
            raise RubricError(f"evidence {evidence.path} was produced with rubric hash {evidence.rubric_hash[:12]}..., "
                              f"the draft of {name!r} is {digest[:12]}...: run the evaluation again with this draft")
        answered = evidence.answered_items
        if answered is None or answered == 0 or answered < self.min_evidence_items:
            raise RubricEvidenceTooSmall(evidence.path, answered, self.min_evidence_items)
        results = evaluate_gates(self.gates, evidence.metrics)
        failing = [g for g in results if not g.passed]
        evidence = evidence.model_copy(update={"gates": results, "status": "fail" if failing else "pass"})
        if failing and not force:
            raise RubricGateFailed(failing)
        index = self._index(name)
        version = max((int(v) for v in index["versions"]), default=0) + 1
        if version > MAX_VERSION:
            raise RubricError(f"rubric {name!r}: no release number left after v{version - 1}")
        stamp = (now or _dt.datetime.now(_dt.timezone.utc)).isoformat(timespec="seconds")
        rel = Release(name=name, version=version, content_hash=digest, content=content, released_at=stamp,
                      evidence=evidence, forced=bool(failing and force), tool_version=__version__)
        text = json.dumps(rel.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        path = self._release_path(name, version)
        if path.exists() or path.is_symlink():
            raise RubricTampered(f"{path} exists but is not in the index: refusing to overwrite it")
        _atomic_write(path, text)
        index["versions"][str(version)] = {"sha256": hashlib.sha256(text.encode()).hexdigest(),
                                           "content_hash": digest, "released_at": stamp}
        self._write_index(name, index)
        return rel

    def unchanged(self, name: str) -> int | None:
        """The latest release's version when the draft's content is exactly that release's (the
        content hash, so formatting does not count), else None: releasing it again would make a
        second version with the same hash."""
        index = self._index(name)
        if not index["versions"]:
            return None
        latest = max(int(v) for v in index["versions"])
        entry = index["versions"][str(latest)]
        return latest if entry.get("content_hash") == self.draft(name).content_hash() else None

    def load(self, name: str, version: int | None = None) -> Release:
        """A release, verified against the index; ``version=None`` means the current one."""
        index = self._index(name)
        if version is None:
            if index["current"] is None:
                raise RubricError(f"rubric {name!r} has no current release in {self._index_path(name)} "
                                  "(release and promote one first)")
            version = int(index["current"])
        entry = index["versions"].get(str(version))
        if entry is None:
            raise RubricError(f"rubric {name!r} has no version {version} in {self._index_path(name)}")
        path = self._release_path(name, version)
        try:
            raw = _read_release(path)
        except OSError as exc:
            raise RubricTampered(f"{path}: released file missing or unreadable: {exc.strerror}") from None
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise RubricTampered(f"{path} was changed after release (sha256 differs from the index); "
                                 "released versions are immutable: make a new draft and release it")
        try:
            rel = Release.model_validate_json(raw)
        except ValidationError as exc:
            raise RubricTampered(f"{path}: {_first_error(exc)}") from None
        if rel.name != name or rel.version != version:
            raise RubricTampered(f"{path}: the release names {rel.name!r} v{rel.version}, not {name!r} v{version}")
        try:
            actual = rel.content.content_hash()
        except ValueError as exc:  # text that cannot be encoded; the parser refuses it first
            raise RubricTampered(f"{path}: content cannot be hashed: {exc}") from None
        if actual != entry["content_hash"] or rel.content_hash != entry["content_hash"]:
            raise RubricTampered(f"{path}: content hash does not match the index")
        return rel

    def _move_pointer(self, name: str, version: int | None, action: str) -> dict[str, Any]:
        index = self._index(name)
        index["pointer_history"].append({"action": action, "from": index["current"], "to": version,
                                         "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
        index["current"] = version
        self._write_index(name, index)
        return index

    def promote(self, name: str, version: int) -> None:
        self.load(name, version)  # verified before anything points at it
        self._move_pointer(name, version, "promote")

    def rollback(self, name: str) -> int | None:
        """Move ``current`` back to where it pointed before the last promote; returns it."""
        index = self._index(name)
        history = [h for h in index["pointer_history"] if h["action"] == "promote"]
        undone = sum(1 for h in index["pointer_history"] if h["action"] == "rollback")
        if len(history) - undone <= 0:
            raise RubricError(f"rubric {name!r}: nothing to roll back ({self._index_path(name)})")
        previous = history[len(history) - undone - 1]["from"]
        if previous is not None:
            self.load(name, int(previous))
        self._move_pointer(name, previous, "rollback")
        return previous

    # -- applying ------------------------------------------------------------------------
    def resolve(self, spec: str) -> tuple[RubricContent, RubricRef]:
        """``NAME`` (current release), ``NAME@N`` (that release) or ``NAME@draft``."""
        name, version = split_spec(spec)
        if version == "draft":
            content = self.draft(name)
            return content, RubricRef(name=name, version=None, content_hash=content.content_hash(),
                                      evidence_status="draft")
        rel = self.load(name, version)
        status = "forced" if rel.forced else rel.evidence.status
        return rel.content, RubricRef(name=name, version=rel.version, content_hash=rel.content_hash,
                                      evidence_status=status)

    def text_of(self, spec: str) -> str:
        """Canonical YAML of a draft or a release's content, for ``diff``."""
        content, _ = self.resolve(spec)
        return _dump_draft(content)

    def diff(self, a: str, b: str) -> str:
        left, right = self.text_of(a), self.text_of(b)
        return "".join(difflib.unified_diff(left.splitlines(True), right.splitlines(True), fromfile=a, tofile=b))


def split_spec(spec: str) -> tuple[str, int | Literal["draft"] | None]:
    """``NAME`` -> (NAME, None: the current release), ``NAME@N`` -> (NAME, N), ``NAME@draft``.

    The name is checked in full and the version is ASCII digits (1-999999999) or ``draft``:
    ``NAME@`` with anything else is refused, never read as the current release."""
    name, at, version = spec.partition("@")
    try:
        check_name(name)
        if not at:
            return name, None
        if version == "draft":
            return name, "draft"
        return name, parse_version(version, what=f"rubric {ascii(name)} version")
    except ValueError as exc:
        raise RubricError(str(exc)) from None


def _read_release(path: Path) -> bytes:
    """A release file's bytes, not through a symlink (a release is a file the store wrote)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()
