"""Start-up cost: ``import oracle`` and ``oracle route`` load only what routing needs.

Checked in fresh interpreters (sys.modules of this test process says nothing). The timing against
``from pydantic import BaseModel`` is benchmarks/startup_bench.py; here, the modules that must not
load, and the CLI's command table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("httpx", "numpy", "networkx", "asyncio")


def loaded_after(code: str) -> set[str]:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_oracle_loads_no_heavy_module():
    loaded = loaded_after("import oracle")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "pydantic" not in loaded  # nothing at all is built until a name is used


def test_public_names_resolve_lazily_and_stay_importable():
    loaded = loaded_after("from oracle import OracleConfig, Task, Route, Policy, OracleError")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    loaded = loaded_after("from oracle import Oracle, OracleConfig\nassert Oracle and OracleConfig")
    assert "oracle._oracle" in loaded


def test_oracle_route_loads_no_provider_batch_or_logging_stack():
    task = ROOT / "examples" / "n_plus_one" / "task.json"
    code = ("import contextlib, io, sys\nfrom oracle.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(['route', {str(task)!r}, '--json'])\n"
            "assert rc == 0, rc")
    loaded = loaded_after(code)
    unwanted = set(HEAVY) | {"structlog", "oracle._oracle", "oracle.providers", "oracle.batch", "oracle.strategies",
                             "oracle._internal.plugins"}  # no entry-point scan: every name it uses is built in
    assert not loaded & unwanted, sorted(loaded & unwanted)
    # A JSON task file and the built-in config: no YAML or TOML parser, no message-list models.
    lazy = {"yaml", "tomllib", "oracle._internal.safe_yaml", "oracle.tasks._messages"}
    assert not loaded & lazy, sorted(loaded & lazy)


def test_library_route_loads_no_provider_evaluation_or_terminal_stack():
    """``Oracle().route(...)``: the Oracle is built and routes without the evaluation side (result
    models, escalation checks, evaluators, providers, asyncio) or anything the CLI renders with."""
    task = ROOT / "examples" / "n_plus_one" / "task.json"
    loaded = loaded_after(f"import json\nfrom oracle import Oracle\nOracle().route(json.load(open({str(task)!r})))")
    assert "oracle._oracle" in loaded and "oracle.routing._chain" in loaded
    unwanted = set(HEAVY) | {"rich", "structlog", "sqlite3", "ssl", "oracle.providers.clients", "oracle.results.result",
                             "oracle.escalation._triggers", "oracle.strategies.protocol", "oracle.cli"}
    assert not loaded & unwanted, sorted(loaded & unwanted)


def test_yaml_and_toml_load_when_a_file_of_their_kind_is_read(tmp_path):
    (tmp_path / "c.toml").write_text("[routing]\nthreshold = 0.5\n")
    loaded = loaded_after("from oracle.config.model import OracleConfig\n"
                          f"OracleConfig.load({str(tmp_path / 'c.toml')!r})")
    assert "tomllib" in loaded and "yaml" not in loaded
    loaded = loaded_after("from oracle.tasks.files import load_tasks\n"
                          f"list(load_tasks({str(ROOT / 'examples' / 'decision_judge' / 'support_replies.yaml')!r}))")
    assert "yaml" in loaded


@pytest.mark.slow
def test_silent_commands_print_only_their_output(tmp_path):
    """route and config skip logging setup: they must not log (structlog's default is stdout)."""
    task = ROOT / "examples" / "n_plus_one" / "task.json"
    for argv in (["route", str(task), "--json"], ["config", "show", "--json"]):
        out = subprocess.run([sys.executable, "-m", "oracle.cli.main", *argv], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        for line in out.stdout.splitlines() if argv[0] == "route" else [out.stdout]:
            json.loads(line)
        assert out.stderr == ""


def test_command_table_matches_the_command_modules():
    import argparse
    import importlib

    from oracle.cli import main as cli

    registered: dict[str, str] = {}
    for name in cli.COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(name).register(sub)
        registered.update({command: name for command in sub.choices})
    assert registered == cli.COMMANDS


@pytest.mark.parametrize("argv, command", [
    (["route", "x.json"], "route"), (["--config", "c.yaml", "route", "x"], "route"),
    (["--log-level", "debug", "--log-format", "json", "batch", "f"], "batch"), (["--help"], None), ([], None),
])
def test_command_is_found_past_global_options(argv, command):
    from oracle.cli.main import _command_in

    assert _command_in(argv) == command
