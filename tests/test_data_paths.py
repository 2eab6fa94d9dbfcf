"""Where the shared data comes from (oracle._internal.data_paths) and what a missing file does in tests and CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle._internal.data_paths import DATA_ENV, DataNotFound, default_data_dir, shared_data_dir, shared_data_file

ROOT = Path(__file__).resolve().parent.parent


def _tree(root: Path) -> Path:
    (root / "suite").mkdir(parents=True)
    (root / "suite" / "reserved_keys.json").write_text("{}", encoding="utf-8")
    return root


def test_explicit_path_beats_the_environment(tmp_path, monkeypatch):
    explicit, env = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    monkeypatch.setenv(DATA_ENV, str(env))
    assert shared_data_dir(explicit) == explicit.resolve()
    assert shared_data_dir() == env.resolve()


def test_default_is_shared_data_beside_the_checkout(monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert default_data_dir() == ROOT.parent / "shared" / "data"
    if default_data_dir().is_dir():
        assert shared_data_dir() == default_data_dir().resolve()
    else:
        with pytest.raises(DataNotFound, match="the default ../shared/data"):
            shared_data_dir()


def test_missing_directory_names_the_path_its_source_and_the_fix(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(DATA_ENV, str(missing))
    with pytest.raises(DataNotFound) as info:
        shared_data_dir()
    message = str(info.value)
    assert str(missing) in message and f"${DATA_ENV}" in message and "--data PATH" in message
    assert info.value.path == missing and info.value.source == f"${DATA_ENV}"


def test_every_missing_file_is_listed(tmp_path):
    root = _tree(tmp_path / "d")
    with pytest.raises(DataNotFound) as info:
        shared_data_dir(root, required=("suite/reserved_keys.json", "humaneval/HumanEval.jsonl.gz", "x/y.json"))
    message = str(info.value)
    assert "HumanEval.jsonl.gz" in message and "x/y.json" in message and "reserved_keys" not in message
    assert shared_data_file("suite/reserved_keys.json", root) == root.resolve() / "suite" / "reserved_keys.json"


def test_no_hard_coded_absolute_data_path_in_benchmarks_examples_or_tests():
    pattern = re.compile(r"""["'](/work/|/home/|/root/)[^"']*""")
    offenders = []
    for folder in ("benchmarks", "examples", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


_NO_AUTOLOAD = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""Only our plugin: the probe run should not pay for every pytest plugin installed on the machine."""
_PROBE = """
def test_needs_data(shared_data):
    assert shared_data("suite/reserved_keys.json").is_file()
"""


@pytest.mark.parametrize("ci, outcome", [("", "1 skipped"), ("true", "1 failed")])
def test_fixture_skips_without_data_but_fails_under_ci(tmp_path, ci, outcome):
    probe = tmp_path / "test_probe.py"
    probe.write_text(_PROBE, encoding="utf-8")
    env = {**os.environ, DATA_ENV: str(tmp_path / "absent"), "CI": ci, "PYTHONPATH": str(ROOT), **_NO_AUTOLOAD}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p",
                           "tests.plugins.shared_data", "--rootdir", str(tmp_path), str(probe)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert outcome in proc.stdout, proc.stdout + proc.stderr
    assert str(tmp_path / "absent") in proc.stdout


def test_fixture_hands_back_the_file_when_present(tmp_path):
    root = _tree(tmp_path / "data")
    probe = tmp_path / "test_probe.py"
    probe.write_text(_PROBE, encoding="utf-8")
    env = {**os.environ, DATA_ENV: str(root), "CI": "true", "PYTHONPATH": str(ROOT), **_NO_AUTOLOAD}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p",
                           "tests.plugins.shared_data", "--rootdir", str(tmp_path), str(probe)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
