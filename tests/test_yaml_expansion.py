"""YAML alias expansion bounded in bytes while composing: a small file never grows into megabytes."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle.tasks._limits import InputLimits
from oracle._internal.safe_yaml import YamlLimitError, load_yaml
from oracle.errors import TaskValidationError
from oracle.tasks.files import load_tasks

ROOT = Path(__file__).resolve().parent.parent


def _few_big_aliases(scalar_bytes: int = 2_000_000, aliases: int = 60) -> str:
    """Under the alias-count limit (60 < 100), but 120 MB once expanded."""
    return ("task: {id: t, prompt: p, metadata: {big: &big '" + "x" * scalar_bytes + "', copies: ["
            + ", ".join(["*big"] * aliases) + "]}}\n"
            "trajectories: [{id: a, answer: x}]\n")


def _nested_laughs(width: int = 4, levels: int = 3, payload: int = 200_000) -> str:
    lines = [f"l0: &l0 ['{'x' * payload}']"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_bytes_limit_stops_few_aliases_of_a_big_node_fast_and_small(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_few_big_aliases())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(TaskValidationError) as info:
        load_tasks(path)
    assert time.perf_counter() - start < 2
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 60 * 1024, grown_kib  # never near the 120 MB the aliases would expand to
    assert "limits.max_expanded_bytes" in str(info.value) and str(path) in str(info.value)


def test_nested_aliases_are_counted_in_bytes_too():
    with pytest.raises(YamlLimitError, match="max_expanded_bytes"):
        load_yaml(_nested_laughs(), max_aliases=1000, max_expanded_bytes=10_000_000)
    # the same document within a larger budget loads, so the bound is the only difference
    assert len(load_yaml(_nested_laughs(), max_aliases=1000, max_expanded_bytes=20_000_000)["l3"]) == 4


def test_the_limit_is_configurable_and_plain_files_are_untouched(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(_few_big_aliases(scalar_bytes=10_000, aliases=5))  # ~60 KB expanded
    assert load_tasks(path)[0].task.id == "t"
    with pytest.raises(TaskValidationError, match="max_expanded_bytes"):
        load_tasks(path, limits=InputLimits(max_expanded_bytes=20_000))
    plain = tmp_path / "plain.yaml"  # no aliases: a large scalar is bounded by max_file_bytes alone
    plain.write_text("task: {id: t, prompt: '" + "y" * 5_000_000 + "'}\ntrajectories: [{id: a}]\n")
    assert len(load_tasks(plain)[0].task.prompt) == 5_000_000


def test_recursive_and_merge_aliases():
    with pytest.raises(YamlLimitError, match="without end"):
        load_yaml("a: &a [1, *a]\n", max_aliases=100)
    assert load_yaml("d: &d {x: 1}\ne: {<<: *d, y: 2}\n", max_aliases=10)["e"] == {"x": 1, "y": 2}


@pytest.mark.slow
@pytest.mark.parametrize("where", ["task", "config", "draft"])
def test_cli_refuses_a_bomb_with_exit_2_naming_file_and_limit(tmp_path, where):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_few_big_aliases())
    if where == "task":
        argv = ["route", str(bomb)]
    elif where == "config":
        argv = ["--config", str(bomb), "config", "show"]
    else:
        draft = tmp_path / "rub" / "r" / "draft.yaml"
        draft.parent.mkdir(parents=True)
        draft.write_text(_few_big_aliases().replace("task: {id: t, prompt: p, metadata:", "description:"))
        bomb = draft
        argv = ["rubric", "hash", "r", "--dir", str(tmp_path / "rub")]
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "oracle", *argv], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert time.perf_counter() - start < 10
    assert out.returncode == 2, out.stderr
    assert "max_expanded_bytes" in out.stderr and str(bomb) in out.stderr, out.stderr
