"""Read the JUnit XML report a repository's custom test command wrote, safely, into node outcomes.

Why so careful: the file comes from the candidate's process. It is opened without following a
link, capped in size, refused outright when it declares a DTD or an entity (no entity expansion,
no external entities: expat's DOCTYPE handler stops the parse before any declaration takes
effect), and only ``testcase`` elements are read.

Node ids are matched as pytest's JUnit writer names test cases (``classname`` = the dotted module
path and classes, ``name`` = the function with its parameters), or by ``classname::name``, or by
``name`` alone.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from typing import NoReturn
from xml.parsers import expat

MAX_BYTES = 16 * 1024 * 1024
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


class JUnitError(ValueError):
    """The report is missing, unsafe or not JUnit XML: the run's report cannot be trusted."""


def read_report(tree: str, rel: str) -> bytes:
    """The bytes of ``rel`` inside ``tree``, never through a link (any path component)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or rel.startswith("/"):
        raise JUnitError(f"junit_xml: {rel!r} must be a relative path inside the repository")
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | (0 if last else os.O_DIRECTORY)
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                raise JUnitError(f"junit_xml: {rel} was not written ({exc.strerror})") from None
            os.close(fd)
            fd = nfd
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JUnitError(f"junit_xml: {rel} is not a regular file")
        if st.st_size > MAX_BYTES:
            raise JUnitError(f"junit_xml: {rel} is larger than {MAX_BYTES} bytes")
        chunks, left = [], MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def remove_stale(tree: str, rel: str) -> None:
    """Before the run: delete whatever sits at ``rel`` (a report the candidate planted, or a link),
    so a report read afterwards was written by this run. Never follows a link."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or rel.startswith("/"):
        raise JUnitError(f"junit_xml: {rel!r} must be a relative path inside the repository")
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                return  # no such directory (or a link to one): nothing of ours to remove
            os.close(fd)
            fd = nfd
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            raise JUnitError(f"junit_xml: {rel} is a directory in the candidate's tree")
        os.unlink(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


def _refuse(*_args: object) -> NoReturn:
    raise JUnitError("junit_xml: the report declares a DTD or an entity (refused)")


def parse(data: bytes) -> dict[str, list[tuple[str, str, float]]]:
    """``{key: [(outcome, message, duration_ms)]}`` for every testcase, under each key it may match."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
        root = builder.close()
    except (expat.ExpatError, AssertionError, IndexError) as exc:
        raise JUnitError(f"junit_xml: not well-formed XML: {exc}") from None
    cases: dict[str, list[tuple[str, str, float]]] = {}
    for case in root.iter("testcase"):
        name, classname = case.get("name", ""), case.get("classname", "")
        outcome, message = "passed", ""
        for child in case:
            tag = child.tag
            text = (child.get("message") or child.text or "").strip()[:2000]
            if tag == "failure":
                outcome, message = "failed", text
            elif tag == "error":
                outcome, message = "error", text
            elif tag == "skipped":
                kind = "xfailed" if "xfail" in (child.get("type") or "") else "skipped"
                outcome, message = kind, text
        try:
            duration = float(case.get("time") or 0.0) * 1000
        except ValueError:
            duration = 0.0
        for key in {f"{classname}\0{name}", f"{classname}::{name}" if classname else name, name}:
            cases.setdefault(key, []).append((outcome, message, duration))
    return cases


def junit_key(node_id: str) -> str:
    """The (classname, name) pytest's JUnit writer gives ``node_id``, as ``classname\\0name``."""
    path, _, rest = node_id.partition("::")
    if not rest:
        return node_id
    names = rest.split("::")
    module = path[:-3] if path.endswith(".py") else path
    classname = ".".join([module.replace("/", "."), *names[:-1]])
    return f"{classname}\0{names[-1]}"


def outcome_of(cases: dict[str, list[tuple[str, str, float]]], node_id: str) -> tuple[str, str, float] | None:
    """The worst outcome recorded for ``node_id`` (a teardown error counts), None when absent."""
    for key in (junit_key(node_id), node_id):
        found = cases.get(key)
        if found:
            return max(found, key=lambda c: _RANK.get(c[0], 3))
    return None
