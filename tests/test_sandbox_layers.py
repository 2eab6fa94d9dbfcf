"""Backend selection: refusal of rlimits-only isolation, named backends, the CLI report; the CPU
weights of the run groups."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os

import pytest

from oracle.errors import IsolationUnavailable
from oracle.sandbox import RunRequest, Sandbox, layers, probe
from oracle.sandbox.cgroups import PARENT_WEIGHT_PER_CPU, RunCgroup

pytestmark = pytest.mark.sandbox


def test_auto_picks_the_strongest_available():
    found = probe()
    sandbox = Sandbox()
    assert sandbox.backend == found.best()
    assert sandbox.provenance()["isolation_level"] == layers.LEVEL[found.best()]


def test_rlimits_only_is_refused_without_both_opt_ins(monkeypatch):
    monkeypatch.delenv("ORACLE_ALLOW_WEAK_SANDBOX", raising=False)
    with pytest.raises(IsolationUnavailable, match="refusing"):
        Sandbox(backend="rlimits")
    with pytest.raises(IsolationUnavailable, match="refusing"):
        Sandbox(backend="rlimits", allow_weak_isolation=True)  # the flag alone is not enough
    monkeypatch.setenv("ORACLE_ALLOW_WEAK_SANDBOX", "1")
    with pytest.raises(IsolationUnavailable):
        Sandbox(backend="rlimits")  # the variable alone is not enough either
    sandbox = Sandbox(backend="rlimits", allow_weak_isolation=True)
    out = asyncio.run(sandbox.run(RunRequest(command=["/usr/bin/python3.11", "-I", "-c", "print(6*7)"])))
    assert out.stdout.strip() == b"42"
    assert sandbox.provenance()["isolation_level"] == "rlimits"


def test_auto_refuses_when_only_rlimits_remain(monkeypatch):
    # Fault injection: pretend this machine has no namespace backend and no Landlock.
    weak = dataclasses.replace(probe(), available={"rlimits": ""},
                               missing={"nsjail": "gone", "bubblewrap": "gone", "landlock": "gone"})
    monkeypatch.setattr(layers, "probe", lambda: weak)
    monkeypatch.delenv("ORACLE_ALLOW_WEAK_SANDBOX", raising=False)
    with pytest.raises(IsolationUnavailable, match="rlimits only"):
        Sandbox()


def test_named_backend_that_is_missing_is_an_error_not_a_fallback(monkeypatch):
    partial = dataclasses.replace(probe(), available={k: v for k, v in probe().available.items()
                                                      if k != "nsjail"},
                                  missing={**probe().missing, "nsjail": "not installed (test)"})
    monkeypatch.setattr(layers, "probe", lambda: partial)
    with pytest.raises(IsolationUnavailable, match="nsjail"):
        Sandbox(backend="nsjail")


def test_sandbox_check_command_prints_layers(capsys):
    from oracle.cli.main import main

    code = main(["sandbox", "check", "--run"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["isolation_level"] == layers.LEVEL[probe().best()]
    assert set(report["backends"]) == {"nsjail", "bubblewrap", "landlock", "rlimits"}
    assert report["trial_run"]["exit_code"] == 0


def test_sandbox_check_reports_refusal(tmp_path, capsys, monkeypatch):
    from oracle.cli.main import main

    monkeypatch.delenv("ORACLE_ALLOW_WEAK_SANDBOX", raising=False)
    cfg = tmp_path / "weak.yaml"
    cfg.write_text("verifier:\n  backend: rlimits\n")
    assert main(["--config", str(cfg), "sandbox", "check"]) == 2
    assert json.loads(capsys.readouterr().out)["ready"] is False


def test_a_run_group_weighs_one_process_and_their_parent_one_process_per_cpu():
    """Sibling runs share fairly; all of them together are not squeezed into one process's share."""
    if not probe().cgroups.cpu:  # probed here, not at collection: probing starts processes
        pytest.skip("no writable cpu controller here")
    support = probe().cgroups
    fname, one, most = PARENT_WEIGHT_PER_CPU[support.version]  # type: ignore[index]
    group = RunCgroup(support, 64 << 20, 16)
    group.create()
    try:
        cpu_dir = next(d for d in group.dirs if d.parent == support.cpu_parent)
        assert int((cpu_dir / fname).read_text()) == one
        assert int((support.cpu_parent / fname).read_text()) == min(most, one * (os.cpu_count() or 1))
    finally:
        group.kill_and_remove()
