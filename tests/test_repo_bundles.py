"""The bundle's trip to a Ray worker (oracle/batch/bundles.py), without Ray: the driver reads each
distinct bundle once (by content), the worker keeps its own file when it has the same bytes and
lands the shipped copy in its cache when the file is missing or differs; the line's resume key
never changes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from oracle.batch.bundles import Shipper, bundle_path, land, landed_entries, with_bundle
from oracle.batch.source import InputEntry, iter_entries, parse_entry

SHA = "0123456789abcdef0123456789abcdef01234567"


def _line(bundle: str, task_id: str = "t") -> dict:
    return {"task": {"id": task_id, "prompt": "fix it", "repository": {"bundle": bundle, "commit": SHA},
                     "tests": [{"kind": "repo_tests", "fail_to_pass": ["tests/test_a.py::test_a"]}]},
            "trajectories": [{"id": "a", "patch": ""}]}


def _entries(tmp_path: Path, lines: list[dict]) -> list[InputEntry]:
    tasks = tmp_path / "in" / "tasks.jsonl"
    tasks.parent.mkdir(exist_ok=True)
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return list(iter_entries(tasks))


def test_the_driver_puts_each_distinct_bundle_once(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.bundle").write_bytes(b"bundle A")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "same.bundle").write_bytes(b"bundle A")  # the same bytes under another name
    (tmp_path / "in" / "b.bundle").write_bytes(b"bundle B")
    entries = _entries(tmp_path, [_line("a.bundle", "1"), _line("a.bundle", "2"),
                                  _line(str(tmp_path / "elsewhere" / "same.bundle"), "3"), _line("b.bundle", "4"),
                                  _line("missing.bundle", "5"),
                                  {"task": {"id": "6", "prompt": "no repository"}, "trajectories": []}])
    put: list[bytes] = []
    shipper = Shipper(lambda data: put.append(data) or f"object-{len(put)}")
    shipped = [shipper.ship(e) for e in entries]
    assert put == [b"bundle A", b"bundle B"] and shipper.shipped == 2
    sha_a, sha_b = hashlib.sha256(b"bundle A").hexdigest(), hashlib.sha256(b"bundle B").hexdigest()
    assert shipped[0] == (str(tmp_path / "in" / "a.bundle"), (sha_a, "object-1"))  # relative: the input's folder
    assert shipped[1] == shipped[0]
    assert shipped[2] == (str(tmp_path / "elsewhere" / "same.bundle"), (sha_a, "object-1"))
    assert shipped[3] == (str(tmp_path / "in" / "b.bundle"), (sha_b, "object-2"))
    assert shipped[4] is None and shipped[5] is None  # nothing to read: the worker says what is wrong


def test_a_worker_keeps_its_own_file_or_lands_the_shipped_copy(tmp_path):
    data = b"the bundle's bytes"
    sha = hashlib.sha256(data).hexdigest()
    fetched: list[int] = []

    def fetch() -> bytes:
        fetched.append(1)
        return data

    own = tmp_path / "own.bundle"
    own.write_bytes(data)
    cache = tmp_path / "cache"
    assert land(str(own), sha, fetch, cache) == str(own) and not fetched  # the same content: its own path
    own.write_bytes(b"another version")  # the same path, other bytes: not the task's bundle
    landed = land(str(own), sha, fetch, cache)
    assert landed == str(cache / "bundles" / f"{sha}.bundle") and Path(landed).read_bytes() == data
    assert oct(os.stat(landed).st_mode & 0o777) == "0o644" and len(fetched) == 1
    assert land(str(tmp_path / "gone.bundle"), sha, fetch, cache) == landed and len(fetched) == 1  # landed once
    with pytest.raises(ValueError, match="task.repository.bundle: the shipped copy"):
        land(str(tmp_path / "gone.bundle"), "0" * 64, fetch, cache)
    assert sorted(p.name for p in (cache / "bundles").iterdir()) == [f"{sha}.bundle"]  # no partial file left


def test_a_landed_entry_names_the_landed_bundle_and_keeps_its_key(tmp_path):
    data = b"bytes"
    sha = hashlib.sha256(data).hexdigest()
    entries = _entries(tmp_path, [_line("gone.bundle"), _line(str(tmp_path / "kept.bundle"), "k")])
    (tmp_path / "kept.bundle").write_bytes(data)
    bundles = {str(tmp_path / "in" / "gone.bundle"): (sha, "ref"), str(tmp_path / "kept.bundle"): (sha, "ref")}
    out = landed_entries(entries, bundles, tmp_path / "cache", {"ref": data}.__getitem__)
    landed = str(tmp_path / "cache" / "bundles" / f"{sha}.bundle")
    assert bundle_path(out[0]) == landed and out[0].key == entries[0].key and out[0].line == entries[0].line
    assert out[1] is entries[1]  # the worker has that file with those bytes
    parsed = parse_entry(out[0])
    assert parsed.error is None and parsed.item.task.repository.bundle == landed
    # the row's identity: the same task, wherever its bundle was read from
    assert parsed.item.task.content_hash() == parse_entry(entries[0]).item.task.content_hash()
    assert with_bundle(entries[0], "/x.bundle").raw != entries[0].raw
