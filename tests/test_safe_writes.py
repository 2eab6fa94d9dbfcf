"""Files the oracle rewrites are never written through a link planted beside them.

Shared output folders (a batch's output, a comparison's folder, a calibration's directory) may be
writable by others; a link planted at the temporary name an atomic write uses must not make the
oracle write into the file the link points at.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oracle._internal.safe_files import write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("old")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_write_atomic_never_writes_through_planted_links(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "report.html"
    for guess in (target.with_name(target.name + ".tmp"), target.with_name("." + target.name + ".tmp")):
        guess.symlink_to(victim)
    write_atomic(target, "<html></html>")
    assert victim.read_text() == "precious"
    assert target.read_text() == "<html></html>"


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "calibration.json"
    target.symlink_to(victim)
    write_atomic(target, "{}\n")
    assert victim.read_text() == "precious" and not target.is_symlink() and target.read_text() == "{}\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "plan.json"
    target.write_text("old")

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


def test_batch_rewrite_removes_a_planted_link_instead_of_writing_through_it(tmp_path):
    from oracle.batch.output import _rewrite_clean

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out.jsonl"
    out.write_text('{"key": "a", "v": 1}\n{"key": "a", "v": 2}\ntorn')
    Path(str(out) + ".tmp").symlink_to(victim)
    _rewrite_clean(out)
    assert victim.read_text() == "precious"
    assert out.read_text() == '{"key": "a", "v": 1}\n'
