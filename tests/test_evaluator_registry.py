"""The open evaluator registry: a result names the evaluator it was asked for (built-in, registered
in code, plugin, or a name nobody has), the Oracle assembles the evaluators (the evaluators register
nothing themselves), and the names from before "evaluator" was the one word still work, warning."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import oracle
import oracle._evaluators as evaluators_module
from oracle import EvaluationContext, EvaluationResult, Oracle, OracleConfig, PluginError, Status
from oracle._evaluators import evaluator_factory, register_evaluator, registered_evaluators
from oracle.results.provenance import EvaluationProvenance
from oracle.tasks.task import Task, TaskInput, Trajectory

ROOT = Path(__file__).resolve().parent.parent
ITEM = TaskInput(task=Task(id="t-reg", prompt="What is 2+2?", reference="4"),
                 trajectories=[Trajectory(id="a", answer="4"), Trajectory(id="b", answer="5")])


class PicksLast:
    """An evaluator written against the public API; it claims another evaluator's name."""

    name = "picks_last"
    version = "2"

    def spec(self, config: OracleConfig) -> dict:
        return {"name": self.name, "version": self.version}

    async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
        last = ctx.trajectories[-1].id
        return EvaluationResult(evaluator="llm_judge", status=Status.ok, best=[last], ranking=[last])


@pytest.fixture
def registered(monkeypatch):
    """``register_evaluator`` into a registry restored after the test."""
    monkeypatch.setattr(evaluators_module, "_REGISTERED", {})
    return evaluators_module._REGISTERED


def run(name: str, oracle_: Oracle | None = None) -> EvaluationResult:
    return asyncio.run((oracle_ or Oracle(OracleConfig())).run_evaluator(ITEM, None, name))


def test_an_unknown_name_is_a_failed_result_naming_it_never_a_validation_error():
    for name in ("no_such_evaluator", "Verifier", " ", "x" * 300):
        result = run(name)
        assert result.status == Status.failed and result.evaluator == name
        assert result.error is not None and result.error.type == "EvaluatorUnavailable"
        assert repr(name) in result.error.message
        assert result.candidates == [] and result.best == []


def test_an_evaluator_registered_in_code_runs_under_the_name_it_was_called_by(registered):
    register_evaluator("picks_last")(PicksLast)
    assert "picks_last" in registered_evaluators()
    assert evaluator_factory("picks_last") is PicksLast
    result = run("picks_last")
    assert result.status == Status.ok and result.best == ["b"]
    assert result.evaluator == "picks_last"  # not the llm_judge it claimed
    assert result.provenance.evaluator == {"name": "picks_last", "version": "2"}
    assert result.latency_ms > 0


def test_registering_refuses_a_built_in_name_and_what_is_not_a_factory(registered):
    for name in ("verifier", "llm_judge", "decision_judge"):
        with pytest.raises(PluginError, match="built-in") as caught:
            register_evaluator(name)
        assert caught.value.plugin == name
    for bad in ("", "  ", None, 3):
        with pytest.raises(PluginError, match="non-empty string"):
            register_evaluator(bad)  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="not a factory"):
        register_evaluator("x")(42)  # type: ignore[arg-type]
    assert registered == {}


def test_a_factory_that_fails_or_makes_no_evaluator_is_a_failed_result(registered):
    def broken() -> PicksLast:
        raise RuntimeError("cannot build this one")

    register_evaluator("broken")(broken)
    register_evaluator("not_one")(lambda: object())
    failed = run("broken")
    assert (failed.evaluator, failed.status, failed.error.type) == ("broken", Status.failed, "RuntimeError")
    assert failed.error.message == "cannot build this one"
    wrong = run("not_one")
    assert (wrong.evaluator, wrong.status, wrong.error.type) == ("not_one", Status.failed, "PluginError")
    assert "not an Evaluator" in wrong.error.message


def test_an_evaluator_that_raises_gives_a_failed_result_with_its_name(registered):
    class Raises(PicksLast):
        async def evaluate(self, ctx: EvaluationContext) -> EvaluationResult:
            raise ValueError("boom inside")

    register_evaluator("raises")(Raises)
    result = run("raises")
    assert (result.evaluator, result.status, result.error.type, result.error.message) == (
        "raises", Status.failed, "ValueError", "boom inside")


def test_the_oracle_assembles_the_built_ins():
    from oracle.strategies.decision_judge.strategy import DecisionJudge
    from oracle.strategies.llm_judge.strategy import LLMJudge
    from oracle.strategies.verifier.strategy import VerifierStrategy

    assert {n: evaluator_factory(n) for n in ("decision_judge", "llm_judge", "verifier")} == {
        "decision_judge": DecisionJudge, "llm_judge": LLMJudge, "verifier": VerifierStrategy}
    assert registered_evaluators() == ["decision_judge", "llm_judge", "verifier"]  # no plugin installed here
    result = run("verifier")  # a real run: the reference check
    assert result.evaluator == "verifier" and result.status == Status.ok and result.best == ["a"]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.slow
def test_the_evaluators_register_nothing_and_import_no_registry():
    """Every import counts (inside functions too): nothing under strategies/ reaches the layer that
    assembles and runs the evaluators, so protocol -> built-ins -> registry has no way back."""
    files = sorted((ROOT / "strategies").rglob("*.py"))
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        upward = {m for m in _imports(path)
                  if m.split(".")[:2] in (["oracle", "_evaluators"], ["oracle", "_oracle"])
                  or m.startswith("oracle.register")}
        assert not upward, f"{path.relative_to(ROOT)} imports {sorted(upward)}"
        used = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Attribute)}
        assert not {n for n in used if n.startswith("register")}, path
    protocol = _imports(ROOT / "strategies" / "protocol.py")
    assert not {m for m in protocol if m.startswith("oracle.strategies.") and m != "oracle.strategies.protocol"}
    code = ("import sys\n"
            "import oracle.strategies.decision_judge.strategy, oracle.strategies.llm_judge.strategy\n"
            "import oracle.strategies.verifier\n"
            "print(sorted(m for m in sys.modules if m in ('oracle._evaluators', 'oracle._oracle')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- the old names -----------------------------------------------------------------------------------

def test_old_top_level_names_warn_and_give_the_new_objects():
    with pytest.warns(DeprecationWarning, match=r"oracle\.Strategy is deprecated; use oracle\.Evaluator"):
        assert oracle.Strategy is oracle.Evaluator
    with pytest.warns(DeprecationWarning,
                      match=r"oracle\.register_strategy is deprecated; use oracle\.register_evaluator"):
        assert oracle.register_strategy is register_evaluator
    assert "Strategy" not in oracle.__all__ and "Strategy" not in dir(oracle)
    with pytest.warns(DeprecationWarning,
                      match=r"protocol\.Strategy is deprecated; use oracle\.strategies\.protocol\.Evaluator"):
        from oracle.strategies.protocol import Strategy
    assert Strategy is oracle.Evaluator


def test_old_registry_functions_warn_and_use_the_one_registry(registered):
    with pytest.warns(DeprecationWarning, match="register_strategy is deprecated; use oracle.register_evaluator"):
        old_register = evaluators_module.register_strategy
    old_register("picks_last")(PicksLast)
    assert registered == {"picks_last": PicksLast}
    with pytest.warns(DeprecationWarning, match="strategy_factory is deprecated; use evaluator_factory"):
        assert evaluators_module.strategy_factory("picks_last") is PicksLast
    with pytest.warns(DeprecationWarning, match="registered_strategies is deprecated; use registered_evaluators"):
        assert "picks_last" in evaluators_module.registered_strategies()
    with pytest.raises(AttributeError):
        evaluators_module.no_such_name  # noqa: B018


def test_old_oracle_methods_warn_and_run_the_evaluator(registered):
    register_evaluator("picks_last")(PicksLast)
    o = Oracle(OracleConfig())
    with pytest.warns(DeprecationWarning, match=r"Oracle\.strategy is deprecated; use Oracle\.evaluator"):
        assert isinstance(o.strategy("picks_last"), PicksLast)
    with pytest.warns(DeprecationWarning, match=r"Oracle\.run_strategy is deprecated; use Oracle\.run_evaluator"):
        result = asyncio.run(o.run_strategy(ITEM, None, "picks_last"))
    assert result.evaluator == "picks_last" and result.best == ["b"]


def test_provenance_reads_the_old_key_and_the_old_attribute_warns():
    old = EvaluationProvenance.model_validate({"strategy": {"name": "verifier", "version": "3"}})
    assert old.evaluator == {"name": "verifier", "version": "3"}
    assert json.loads(old.model_dump_json()) == {"evaluator": {"name": "verifier", "version": "3"}}
    with pytest.warns(DeprecationWarning, match=r"EvaluationProvenance\.strategy is deprecated"):
        assert old.strategy == {"name": "verifier", "version": "3"}
    with pytest.warns(DeprecationWarning, match=r"EvaluationProvenance\.strategy is deprecated"):
        old.strategy = {"name": "x"}
    assert old.evaluator == {"name": "x"}
    with pytest.raises(ValueError, match="unknown_key"):
        EvaluationProvenance.model_validate({"unknown_key": 1})


@pytest.mark.slow
def test_nothing_in_the_package_uses_a_deprecated_name():
    """Running an evaluation end to end, and importing every module, raises no DeprecationWarning
    of ours (the old names are for callers, never for the package itself)."""
    code = ("import warnings, pkgutil, importlib\n"
            "warnings.simplefilter('error', DeprecationWarning)\n"
            "import oracle, oracle.policies, oracle.strategies\n"
            "skip = ('oracle.__main__', 'oracle.local_model', 'oracle.integrations.', 'oracle.sandbox.runtime.')\n"
            "for pkg in (oracle, oracle.policies, oracle.strategies):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        if not m.name.startswith(skip):\n"
            "            importlib.import_module(m.name)\n"
            "r = oracle.Oracle(oracle.OracleConfig()).evaluate({'task': {'id': 't', 'prompt': 'What is 2+2?',"
            " 'reference': '4'}, 'trajectories': [{'id': 'a', 'answer': '4'}]})\n"
            "print(r.status.value, r.result.evaluator, sorted(r.result.provenance.evaluator))\n")
    with warnings.catch_warnings():
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "verifier", "['name',", "'version']"]
