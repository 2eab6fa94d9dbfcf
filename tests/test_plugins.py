"""Third-party plugins through package entry points: a real distribution (dist-info on sys.path) in
a subprocess, with a policy, an evaluator and a CLI command, written against the public API only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TASK_FILE = ROOT / "examples" / "n_plus_one" / "task.json"

PLUGIN = '''
"""A third-party package extending oracle-router; it imports only public names."""
from oracle import BasePolicy, EvaluationContext, EvaluationResult, OracleConfig, Signals, Status, Vote


class AlwaysJudge(BasePolicy):
    """Votes for the LLM judge on every task (so its effect on a route is plain to see)."""

    name = "always_judge"
    version = "7"

    def vote(self, signals: Signals) -> Vote | None:
        return Vote(scores={"decision_judge": 0.0, "llm_judge": 1.0, "verifier": 0.0},
                    reason="the plugin says so")


class Echo:
    """An evaluator that picks the first candidate."""

    name = "echo"
    version = "0.3"

    def spec(self, config: OracleConfig) -> dict:
        return {"name": self.name, "version": self.version}

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        first = ctx.trajectories[0].id
        return EvaluationResult(evaluator=self.name, status=Status.ok, best=[first], ranking=[first],
                                explanation="echo plugin")


def make_echo() -> Echo:
    return Echo()


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo-hello", help="a command from a plugin")
    parser.set_defaults(func=lambda args: print("hello from the demo plugin") or 0)
'''


def make_dist(site: Path, name: str, module_source: str, entry_points: str) -> None:
    """A minimal installed distribution: the module and a .dist-info with METADATA and entry points."""
    (site / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def good_site(tmp_path: Path) -> Path:
    site = tmp_path / "good"
    site.mkdir()
    make_dist(site, "oracle_demo_plugin", PLUGIN, """
        [oracle_router.policies]
        always_judge = oracle_demo_plugin:AlwaysJudge
        [oracle_router.evaluators]
        echo = oracle_demo_plugin:make_echo
        [oracle_router.commands]
        demo-hello = oracle_demo_plugin:register
        """)
    return site


def broken_site(tmp_path: Path) -> Path:
    site = tmp_path / "broken"
    site.mkdir()
    make_dist(site, "oracle_broken_plugin", "raise ImportError('this plugin is broken on purpose')\n", """
        [oracle_router.policies]
        broken_policy = oracle_broken_plugin:Nothing
        [oracle_router.evaluators]
        broken_eval = oracle_broken_plugin:nothing
        [oracle_router.commands]
        broken-cmd = oracle_broken_plugin:register
        """)
    return site


def run(site: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    argv = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "oracle.cli.main", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


def test_a_plugin_policy_votes_when_the_config_names_it(tmp_path):
    code = f"""
import json
from oracle import Oracle, OracleConfig
cfg = OracleConfig(routing={{"policies": {{"always_judge": {{"weight": 50}}}}}})
route = Oracle(cfg).route(json.load(open({str(TASK_FILE)!r})))
vote = [v for v in route.votes if v.policy == "always_judge"][0]
print(json.dumps({{"evaluator": route.evaluator, "version": vote.version, "reason": vote.reason}}))
"""
    out = run(good_site(tmp_path), code=code)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got == {"evaluator": "llm_judge", "version": "7", "reason": "the plugin says so"}


@pytest.mark.slow
def test_a_plugin_evaluator_is_registered_and_runs_under_its_own_name(tmp_path):
    code = f"""
import asyncio, json
from oracle import Oracle, OracleConfig
from oracle._evaluators import registered_evaluators
from oracle.tasks.task import TaskInput
oracle = Oracle(OracleConfig())
item = TaskInput.model_validate(json.load(open({str(TASK_FILE)!r})))
result = asyncio.run(oracle.run_evaluator(item, oracle.route(item), "echo"))
unknown = asyncio.run(oracle.run_evaluator(item, oracle.route(item), "no_such_evaluator"))
print(json.dumps({{"kinds": registered_evaluators(), "best": result.best, "evaluator": result.evaluator,
                  "spec": result.provenance.evaluator, "why": result.explanation,
                  "unknown": unknown.model_dump(mode="json", include={{"evaluator", "status", "error"}})}}))
"""
    out = run(good_site(tmp_path), code=code)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["kinds"] == ["decision_judge", "echo", "llm_judge", "verifier"]
    assert got["evaluator"] == "echo"
    assert got["spec"] == {"name": "echo", "version": "0.3"} and got["why"] == "echo plugin"
    assert len(got["best"]) == 1
    # With plugins installed, a name nobody has is still a failed result naming it.
    assert got["unknown"]["evaluator"] == "no_such_evaluator" and got["unknown"]["status"] == "failed"
    assert got["unknown"]["error"]["type"] == "EvaluatorUnavailable"
    assert "'no_such_evaluator'" in got["unknown"]["error"]["message"]


@pytest.mark.slow
def test_a_plugin_command_runs_and_shows_in_help(tmp_path):
    site = good_site(tmp_path)
    out = run(site, "demo-hello")
    assert out.returncode == 0 and out.stdout == "hello from the demo plugin\n", out.stderr
    helped = run(site, "--help")
    assert helped.returncode == 0 and "demo-hello" in helped.stdout


@pytest.mark.slow
def test_a_plugin_that_fails_to_load_is_an_error_naming_it(tmp_path):
    site = broken_site(tmp_path)
    helped = run(site, "--help")
    assert helped.returncode == 2
    assert "broken-cmd" in helped.stderr and "this plugin is broken on purpose" in helped.stderr
    code = """
from oracle import Oracle, OracleConfig, PluginError
from oracle._evaluators import evaluator_factory
try:
    Oracle(OracleConfig(routing={"policies": {"broken_policy": {"weight": 1}}}))
except Exception as exc:
    print("config:", type(exc).__name__, exc)
try:
    evaluator_factory("broken_eval")
except PluginError as exc:
    print("evaluator:", exc.plugin, exc)
import asyncio, json
from oracle import Oracle
from oracle.tasks.task import TaskInput
item = TaskInput.model_validate(json.load(open(%r)))
result = asyncio.run(Oracle(OracleConfig()).run_evaluator(item, None, "broken_eval"))
print("run:", json.dumps(result.model_dump(mode="json", include={"evaluator", "status", "error"})))
""" % str(TASK_FILE)
    out = run(site, code=code)
    assert out.returncode == 0, out.stderr
    config_part, evaluator_part = out.stdout.split("evaluator:")
    evaluator_part, run_part = evaluator_part.split("run:")
    assert config_part.startswith("config:")
    assert "broken_policy" in config_part and "this plugin is broken on purpose" in config_part
    assert evaluator_part.startswith(" broken_eval ") and "oracle_broken_plugin" in evaluator_part
    # Run through the Oracle, the same fault is a failed result named after the evaluator asked for.
    ran = json.loads(run_part)
    assert ran["evaluator"] == "broken_eval" and ran["status"] == "failed"
    assert ran["error"]["type"] == "PluginError" and "this plugin is broken on purpose" in ran["error"]["message"]


def test_routing_a_file_never_scans_plugins(tmp_path):
    """`oracle route FILE` with only built-in names: a broken plugin installed changes nothing."""
    out = run(broken_site(tmp_path), "route", str(TASK_FILE), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["route"]["evaluator"] == "verifier"
