"""Every stored file kind, mutated, through every command that reads it: exit 0 or 2, never 1.

File kinds: a rubric's index.json, a release file (with and without the index re-hashed to
match, as someone who rewrites both would), a draft, comparison and calibration evidence, the
escalation store's SQLite rows (each JSON and text column), task files and config files. Each
mutation replaces one value anywhere in the document with a hostile one (deep nesting, a number
past the int-to-string limit, a million-digit decimal, a lone surrogate, a wrong type), deletes
or adds a key, or cuts or garbles the bytes. Hypothesis drives the CLI's ``main`` in-process
(fast, many examples); a fixed sample of the same mutations runs as real ``python -m oracle``
subprocesses, where stdout is a real UTF-8 stream. On exit 2 the error must name the file.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.cli.main import main
from tests.data.tasks import code_task, open_task
from tests.profiles import examples

ROOT = Path(__file__).resolve().parent.parent
ESC_ID = "esc-0123456789abcdef"

# -- hostile values, written into JSON text by placeholder (json.dumps cannot write some of them) --

_RAW = {
    "deep": "[" * 5000 + "]" * 5000,
    "deep_obj": '{"a":' * 3000 + "1" + "}" * 3000,
    "huge_int": "9" * 5000,
    "big_int": "9" * 4200,
    "long_decimal": "1." + "9" * 200_000,
    "huge_exp": "1e99999",
    "surrogate": '"\\ud800"',
    "surrogate_mid": '"ab\\udfffcd"',
    "surrogate_pair_ok": '"\\ud83d\\ude00"',
    "long_text": '"' + "x" * 100_000 + '"',
    "lookalike_digits": '"\u0661\u0662"',
    "superscript": '"\u00b2"',
    "version_text": '"1.' + "9" * 10_000 + '"',
    "neg": "-1",
    "zero": "0",
    "float": "1.5",
    "true": "true",
    "null": "null",
    "list": "[1, 2]",
    "dict": '{"x": 1}',
    "empty_text": '""',
    "text": '"abc"',
}
HOSTILE = sorted(_RAW)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:5]):
            out += _paths(v, prefix + (i,))
    return out


def _replace(doc: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in doc.items()}
    return [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(doc)]


def _delete(doc: Any, path: tuple) -> Any:
    if len(path) == 1:
        if isinstance(doc, dict):
            return {k: v for k, v in doc.items() if k != path[0]}
        return [v for i, v in enumerate(doc) if i != path[0]]
    head = path[0]
    if isinstance(doc, dict):
        return {k: (_delete(v, path[1:]) if k == head else v) for k, v in doc.items()}
    return [(_delete(v, path[1:]) if i == head else v) for i, v in enumerate(doc)]


@st.composite
def mutated_json(draw: st.DrawFn, text: str) -> str:
    """One hostile edit of the JSON document ``text``, as text."""
    doc = json.loads(text)
    kind = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add_key", "bytes"]))
    paths = _paths(doc)
    if kind == "bytes":
        raw = text
        op = draw(st.sampled_from(["cut", "garble", "empty", "bom"]))
        if op == "cut":
            return raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
        if op == "garble":
            at = draw(st.integers(0, max(0, len(raw) - 1)))
            return raw[:at] + draw(st.sampled_from(["\x00", "}", "\\", '"', "\\ud800"])) + raw[at:]
        return "" if op == "empty" else "\ufeff" + raw
    path = draw(st.sampled_from(paths))
    if kind == "delete" and path:
        return json.dumps(_delete(doc, path))
    token = "@@HOSTILE@@"
    if kind == "add_key":
        where = draw(st.sampled_from([p for p in paths if isinstance(_get(doc, p), dict)] or [()]))
        key = draw(st.sampled_from(["extra", "\\ud800", "1" * 20]))
        target = dict(_get(doc, where)) if isinstance(_get(doc, where), dict) else {}
        target[token + "K"] = token
        out = json.dumps(_replace(doc, where, target))
        return out.replace(f'"{token}K"', f'"{key}"').replace(f'"{token}"', _RAW[draw(st.sampled_from(HOSTILE))])
    value = _RAW[draw(st.sampled_from(HOSTILE))]
    return json.dumps(_replace(doc, path, token)).replace(f'"{token}"', value)


def _get(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


# -- a store with one rubric released and promoted, and one pending escalation ------------------

def _quiet_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _build(base: Path) -> None:
    rub = base / "rub"
    assert _quiet_main("rubric", "new", "r", "--dir", str(rub))[0] == 0
    digest = _quiet_main("rubric", "hash", "r", "--dir", str(rub))[1].strip()
    evidence = base / "evidence.json"
    evidence.write_text(json.dumps({"results": [{"arm": "routed", "agreement": 0.9, "n": 20, "decided": 20,
                                                 "answered_items": 20,
                                                 "calibration": [{"n": 10, "mean_confidence": 0.8,
                                                                  "accuracy": 0.7}]}],
                                    "rubric_hashes": {"r@draft": digest}}))
    (base / "calibration.json").write_text(json.dumps({
        "version": 2, "evaluator": "decision_judge", "models": {},
        "evidence": {"rubric_hash": digest, "item_outcomes": {"answered": 40},
                     "metrics": {"kappa": {"value": 0.7}, "n": 40}}}))
    assert _quiet_main("rubric", "release", "r", "--evidence", str(evidence), "--dir", str(rub))[0] == 0
    assert _quiet_main("rubric", "promote", "r", "1", "--dir", str(rub))[0] == 0
    # r's draft is released now (releasing it again reads no evidence): the evidence files are read
    # by releasing e, a draft of the same content never released
    assert _quiet_main("rubric", "new", "e", "--dir", str(rub))[0] == 0
    from oracle.escalation.store import EscalationStore
    from tests.test_escalation_store_concurrency import _file

    with EscalationStore(base / "esc.sqlite") as store:
        _file(store, ESC_ID, options=["yes", "no"])
    (base / "task.json").write_text(json.dumps(open_task(metadata={"k": [1, {"x": "y"}]})))
    (base / "code.json").write_text(json.dumps(code_task()))
    (base / "config.json").write_text(json.dumps({"routing": {"min_confidence": 0.2},
                                                  "limits": {"max_depth": 32},
                                                  "rubrics": {"gates": [{"metric": "n", "op": ">=", "value": 1}]}}))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stored-base")
    _build(path)
    return path


def _rehash(index: Path, release: Path) -> None:
    import hashlib

    data = json.loads(index.read_text())
    data["versions"]["1"]["sha256"] = hashlib.sha256(release.read_bytes()).hexdigest()
    index.write_text(json.dumps(data))


RUBRIC_READERS = [["rubric", "list"], ["rubric", "list", "--json"], ["rubric", "show", "r"],
                  ["rubric", "show", "r@1"], ["rubric", "diff", "r@1", "r@draft"], ["rubric", "hash", "r"],
                  ["rubric", "promote", "r", "1"], ["rubric", "rollback", "r"]]
ESC_READERS = [["escalations", "list"], ["escalations", "list", "--json"], ["escalations", "show", ESC_ID],
               ["escalations", "show", ESC_ID, "--json"], ["escalations", "answer", ESC_ID, "x", "--choice", "yes"],
               ["resume", ESC_ID, "--json"]]


def _kind_plan(kind: str, d: Path) -> tuple[Path, str, list[list[str]]]:
    """(file to mutate, its text, commands that read it) for one file kind in the copy ``d``."""
    rub = ["--dir", str(d / "rub")]
    if kind in ("index", "release", "release_rehashed"):
        f = d / "rub/r" / ("index.json" if kind == "index" else "v1.json")
        return f, f.read_text(), [c + rub for c in RUBRIC_READERS]
    if kind in ("evidence", "calibration"):
        f = d / f"{kind}.json"
        return f, f.read_text(), [["rubric", "release", "e", "--evidence", str(f), *rub]]
    if kind == "task":
        f = d / "task.json"
        return f, f.read_text(), [["route", str(f)], ["route", str(f), "--json"],
                                  ["rubric", "new", "zz", "--from", str(f), *rub]]
    if kind == "config":
        f = d / "config.json"
        g = d / "config.yaml"  # JSON is YAML: the config loader reads it by suffix
        return g, f.read_text(), [["--config", str(g), "config", "show", "--json"],
                                  ["--config", str(g), "route", str(d / "code.json")],
                                  ["--config", str(g), "rubric", "list", *rub]]
    raise AssertionError(kind)


FILE_KINDS = ["index", "release", "release_rehashed", "evidence", "calibration", "task", "config"]


def _write(kind: str, f: Path, text: str, d: Path) -> None:
    f.write_bytes(text.encode("utf-8", "surrogatepass"))
    if kind == "release_rehashed":
        _rehash(d / "rub/r/index.json", f)


def _check(code: int, err: str, named: str, argv: list[str]) -> None:
    assert code in (0, 2, 3), f"{argv[:4]} -> exit {code}: {err[-600:]}"
    assert "Traceback" not in err and "internal error" not in err, err[-600:]
    if code == 2:
        assert named in err, f"{argv[:4]}: the error does not name {named}: {err[-400:]}"


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), kind=st.sampled_from(FILE_KINDS))
def test_mutated_files_in_process(base, data, kind):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "s"
        shutil.copytree(base, d)
        f, text, commands = _kind_plan(kind, d)
        mutated = data.draw(mutated_json(text), label="mutated")
        _write(kind, f, mutated, d)
        for argv in commands:
            code, _, err = _quiet_main(*argv)
            _check(code, err, f.name, argv)


# -- the escalation store's rows ------------------------------------------------------------------

_COLUMNS_JSON = ["request", "task_input", "first_result", "answer", "final_result"]
_COLUMNS_TEXT = ["id", "task_id", "state", "created_at", "answered_at"]


@st.composite
def row_edit(draw: st.DrawFn, base_row: dict[str, Any]) -> tuple[str, Any, str]:
    """(column, new value, state) for one hostile edit of the stored row."""
    column = draw(st.sampled_from(_COLUMNS_JSON + _COLUMNS_TEXT))
    state = draw(st.sampled_from(["pending", "answered", "resolved"]))
    original = base_row.get(column)
    if column in _COLUMNS_JSON and isinstance(original, str) and draw(st.booleans()):
        return column, draw(mutated_json(original)), state
    if column == "answer" and draw(st.booleans()):
        return column, draw(mutated_json('{"text": "x", "choice": "yes", "answered_by": "me"}')), state
    value = draw(st.sampled_from([
        5, 1e308, -1.0, b"\xff\xfe", "", "x" * 10_000, "\ud800", "9" * 5000, "[" * 3000 + "]" * 3000,
        '{"text": "\\ud800"}', "null", "[]", 2**62, float("inf")]))
    return column, value, state


def _apply_row_edit(db: Path, column: str, value: Any, state: str) -> bool:
    conn = sqlite3.connect(db)
    try:
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogatepass")  # stored as raw bytes, cast to TEXT
            conn.execute(f"UPDATE escalations SET {column}=CAST(? AS TEXT), state=?", (value, state))
        else:
            conn.execute(f"UPDATE escalations SET {column}=?, state=?", (value, state))
        conn.commit()
        return True
    except sqlite3.IntegrityError:  # NOT NULL and the like: SQLite itself refuses the edit
        return False
    finally:
        conn.close()


@pytest.fixture(scope="module")
def base_row(base) -> dict[str, Any]:
    conn = sqlite3.connect(base / "esc.sqlite")
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM escalations").fetchone())
    finally:
        conn.close()


@settings(max_examples=examples(50), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_escalation_rows_in_process(base, base_row, data):
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "esc.sqlite"
        shutil.copy(base / "esc.sqlite", db)
        column, value, state = data.draw(row_edit(base_row), label="edit")
        if not _apply_row_edit(db, column, value, state):
            return
        for argv in ESC_READERS:
            code, _, err = _quiet_main(*argv, "--store", str(db))
            _check(code, err, "esc.sqlite", argv)


def _edited_row(base: Path, db: Path, state: str, **columns: Callable[[dict], Any]) -> None:
    """Copy the base store to ``db`` and set each named JSON column to ``edit(parsed column)``."""
    shutil.copy(base / "esc.sqlite", db)
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT request, task_input FROM escalations").fetchone()
        parsed = {"request": json.loads(row[0]), "task_input": json.loads(row[1]), "answer": None}
    finally:
        conn.close()
    for column, edit in columns.items():
        assert _apply_row_edit(db, column, json.dumps(edit(parsed[column])), state)


def _with(doc: Any, path: tuple, value: Any) -> Any:
    return _replace(doc, path, value)


_ANSWER = {"text": "x", "choice": "yes", "answered_by": "me"}

# Stored rows found by the fuzz test above (the first) and by a sweep over every place of the
# request, answer and task columns (the rest): each is refused naming the store, by every reader
# or by the one it reaches (the others exit 0 or refuse it the same way).
_ROW_CASES = {
    "request-empty-option": ("pending", {"request": lambda r: _with(r, ("options",), ["", "no"])},
                             "options[0]: empty"),
    "request-other-options": ("pending", {"request": lambda r: _with(r, ("options",), ["abc", "no"])},
                              "choice: 'yes' is not one of ['abc', 'no']"),
    "request-other-id": ("pending", {"request": lambda r: _with(r, ("id",), "esc-ffff")}, "not the row's id"),
    "answer-choice-not-an-option": ("answered", {"answer": lambda _: {**_ANSWER, "choice": "maybe"}},
                                    "answer: choice: 'maybe' is not one of"),
    "answer-nothing-given": ("answered", {"answer": lambda _: {"text": " ", "choice": None}},
                             "give a text or a choice"),
    "task-human-answers-not-a-list": (
        "answered", {"answer": lambda _: _ANSWER,
                     "task_input": lambda t: _with(t, ("task", "metadata"), {"human_answers": 5})},
        "task.metadata.human_answers: int, not a list"),
}


@pytest.mark.parametrize("case", sorted(_ROW_CASES))
def test_stored_rows_that_do_not_fit_are_refused_naming_the_store(base, tmp_path, case):
    state, columns, reason = _ROW_CASES[case]
    db = tmp_path / "esc.sqlite"
    _edited_row(base, db, state, **columns)
    refusals = []
    for argv in ESC_READERS:
        code, _, err = _quiet_main(*argv, "--store", str(db))
        _check(code, err, "esc.sqlite", argv)
        if code == 2:
            assert str(db) in err, err
            refusals.append(err)
    assert any(reason in err for err in refusals), refusals


def test_the_store_files_no_request_it_would_refuse_to_read(tmp_path):
    from oracle.escalation.store import EscalationStore
    from tests.test_escalation_store_concurrency import _file

    with EscalationStore(tmp_path / "esc.sqlite") as store:
        with pytest.raises(ValueError, match=r"request: options\[1\]: empty"):
            _file(store, ESC_ID, options=["yes", ""])
        assert store.count() == 0


# -- the same mutations as real subprocesses (real stdout, real exit codes) -----------------------

_SUBPROCESS_CASES: list[tuple[str, str]] = [
    ("index", "surrogate"), ("index", "huge_int"), ("index", "deep"), ("index", "lookalike_digits"),
    ("release_rehashed", "surrogate"), ("release_rehashed", "big_int"), ("release", "deep"),
    ("evidence", "huge_int"), ("evidence", "big_int"), ("evidence", "deep"), ("calibration", "big_int"),
    ("task", "surrogate"), ("task", "big_int"), ("task", "surrogate_mid"), ("config", "big_int"),
    ("config", "surrogate"),
]


def _every_place(text: str, hostile: str) -> list[str]:
    """The document with ``hostile`` put at each of its first places (one variant per place)."""
    doc = json.loads(text)
    token = "@@HOSTILE@@"
    return [json.dumps(_replace(doc, p, token)).replace(f'"{token}"', _RAW[hostile]) for p in _paths(doc)[1:7]]


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "oracle", *argv], cwd=ROOT, env=env, capture_output=True,
                          timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("kind,hostile", _SUBPROCESS_CASES)
def test_mutated_files_as_subprocesses(base, tmp_path, kind, hostile):
    jobs = []
    for i, variant in enumerate(_every_place(_kind_plan(kind, base)[1], hostile)[:2]):
        d = tmp_path / f"v{i}"
        shutil.copytree(base, d)
        f, _, commands = _kind_plan(kind, d)
        _write(kind, f, variant, d)
        jobs += [(argv, f.name) for argv in commands[:3]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: (job, _run(job[0])), jobs))
    for (argv, named), out in results:
        err = out.stderr.decode("utf-8", "replace")
        _check(out.returncode, err, named, argv)


@pytest.mark.slow
@pytest.mark.parametrize("column,value", [
    ("answer", '{"text": "\\ud800", "choice": "yes"}'), ("answer", "[" * 100_000 + "]" * 100_000),
    ("request", "{" * 1), ("answered_at", "1e309"), ("created_at", "9" * 100_000),
], ids=["answer-surrogate", "answer-deep", "request-cut", "answered_at-inf", "created_at-huge"])
def test_mutated_escalation_rows_as_subprocesses(base, tmp_path, column, value):
    db = tmp_path / "esc.sqlite"
    shutil.copy(base / "esc.sqlite", db)
    assert _apply_row_edit(db, column, value, "answered")
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda argv: (argv, _run([*argv, "--store", str(db)])), ESC_READERS))
    for argv, out in results:
        _check(out.returncode, out.stderr.decode("utf-8", "replace"), "esc.sqlite", argv)


@pytest.mark.slow
def test_lone_surrogates_on_the_command_line_and_on_stdout(base, tmp_path):
    """Bytes that are not UTF-8 in argv arrive as lone surrogates: refused by name, never a crash."""
    db = tmp_path / "esc.sqlite"
    shutil.copy(base / "esc.sqlite", db)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cases = [
        [b"escalations", b"answer", ESC_ID.encode(), b"caf\xe9", b"--store", str(db).encode()],
        [b"escalations", b"show", b"esc-\xff\xfe01234567", b"--store", str(db).encode()],
        [b"rubric", b"show", b"r\xff", b"--dir", str(base / "rub").encode()],
        [b"rubric", b"show", b"r@\xd9\xa1", b"--dir", str(base / "rub").encode()],
        [b"route", str(tmp_path).encode() + b"/missing-\xff.json"],
    ]
    for argv in cases:
        out = subprocess.run([sys.executable.encode(), b"-m", b"oracle", *argv], cwd=ROOT, env=env,
                             capture_output=True, timeout=120)
        err = out.stderr.decode("utf-8", "replace")
        assert out.returncode == 2, (argv, out.returncode, err)
        assert "Traceback" not in err and "internal error" not in err


def test_huge_version_text_is_refused_fast(base):
    import time

    start = time.perf_counter()
    code, _, err = _quiet_main("rubric", "show", "r@1." + "9" * 1_000_000, "--dir", str(base / "rub"))
    assert code == 2 and "release number" in err
    code, _, err = _quiet_main("rubric", "diff", "r@" + "9" * 1_000_000, "r@draft", "--dir", str(base / "rub"))
    assert code == 2 and "release number" in err
    for lookalike in ("\u0661", "\u00b2", "+1", " 1", "1_0", "01"):
        code, _, err = _quiet_main("rubric", "show", f"r@{lookalike}", "--dir", str(base / "rub"))
        assert code == 2, (lookalike, err)
    assert _quiet_main("rubric", "show", "r\n", "--dir", str(base / "rub"))[0] == 2  # full match, not ^...$
    assert time.perf_counter() - start < 5
