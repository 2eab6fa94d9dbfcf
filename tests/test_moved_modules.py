"""The public module paths from before the package was regrouped still import, warn, and give the very
module at the new path (one class identity, one registry); nothing else is aliased."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle._internal.moved import MOVED

ROOT = Path(__file__).resolve().parent.parent

OLD_PUBLIC = {"oracle.config", "oracle.errors", "oracle.task", "oracle.task_file", "oracle.result", "oracle.route",
              "oracle.signals", "oracle.strategy", "oracle.policy", "oracle.policies", "oracle.concerns",
              "oracle.provenance", "oracle.ledger", "oracle.prices", "oracle.providers", "oracle.integrations",
              "oracle.local_model"}
"""The public modules the package docstring named before the regrouping (commit d1ac9ca)."""


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter with every warning recorded; it prints one JSON value."""
    prelude = ("import json, sys, warnings\n"
               "warnings.simplefilter('always')\n"
               "caught = warnings.catch_warnings(record=True)\n"
               "log = caught.__enter__()\n"
               "warnings.simplefilter('always')\n")
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_every_old_public_module_still_imports():
    for old in sorted(OLD_PUBLIC):
        assert old in MOVED or importlib.util.find_spec(old) is not None, old
    moved = {old for old in OLD_PUBLIC if old in MOVED}
    assert moved == {"oracle.task", "oracle.task_file", "oracle.result", "oracle.route", "oracle.signals",
                     "oracle.strategy", "oracle.policy", "oracle.concerns", "oracle.provenance", "oracle.ledger",
                     "oracle.prices"}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_new_module_and_warns_naming_it(old):
    new, hint = MOVED[old]
    got = _fresh(f"import {old} as old_module\n"
                 f"import {new} as new_module\n"
                 "print(json.dumps({'same': old_module is new_module,\n"
                 f"    'modules_same': sys.modules[{old!r}] is sys.modules[{new!r}],\n"
                 "    'name': old_module.__name__, 'spec': old_module.__spec__.name,\n"
                 "    'warnings': [(w.category.__name__, str(w.message), w.filename) for w in log]}))\n")
    assert got["same"] and got["modules_same"]
    assert got["name"] == got["spec"] == new  # the shared module keeps its own identity
    ours = [w for w in got["warnings"] if w[0] == "DeprecationWarning"]
    assert len(ours) == 1, got["warnings"]
    assert ours[0][1] == f"{old} is deprecated; import {hint} (it is the same module, moved)"
    assert ours[0][2] == "<string>"  # it points at the import statement, not at the import machinery


def test_an_old_class_is_the_same_class_and_the_registry_is_one():
    got = _fresh("from oracle.task import Task as OldTask\n"
                 "from oracle.result import EvaluationResult as OldResult\n"
                 "from oracle.route import Route as OldRoute\n"
                 "from oracle.strategy import EvaluationContext, Strategy, register_strategy\n"
                 "import oracle, oracle._evaluators as registry\n"
                 "register_strategy('old_style')(lambda: None)\n"
                 "import oracle.tasks.task, oracle.results.result, oracle.routing.route\n"
                 "print(json.dumps({'task': OldTask is oracle.tasks.task.Task,\n"
                 "    'result': OldResult is oracle.results.result.EvaluationResult,\n"
                 "    'route': OldRoute is oracle.routing.route.Route, 'ctx': EvaluationContext is "
                 "oracle.EvaluationContext,\n"
                 "    'protocol': Strategy is oracle.Evaluator, 'registered': sorted(registry._REGISTERED),\n"
                 "    'task_built': OldTask(id='t', prompt='p').model_dump(include={'id'}),\n"
                 "    'messages': sorted({str(w.message).split(' is deprecated')[0] for w in log})}))\n")
    assert got["task"] and got["result"] and got["route"] and got["ctx"] and got["protocol"]
    assert got["registered"] == ["old_style"]
    assert got["task_built"] == {"id": "t"}
    assert got["messages"] == ["Strategy", "oracle.result", "oracle.route", "oracle.strategy", "oracle.task",
                               "register_strategy"]


def test_old_attribute_paths_and_find_spec_work():
    got = _fresh("import oracle.signals, oracle.prices, importlib.util\n"
                 "print(json.dumps({'attr': oracle.signals.Signals.__module__, 'cost': "
                 "callable(oracle.prices.cost_usd),\n"
                 "    'spec': importlib.util.find_spec('oracle.ledger') is not None}))\n")
    assert got == {"attr": "oracle.routing.signals", "cost": True, "spec": True}


def test_in_process_the_alias_is_the_module_already_loaded():
    import oracle.tasks.files as files

    sys.modules.pop("oracle.task_file", None)
    with pytest.warns(DeprecationWarning, match=r"oracle\.task_file is deprecated; import oracle\.tasks\.files"):
        old = importlib.import_module("oracle.task_file")
    try:
        assert old is files and files.__spec__.name == "oracle.tasks.files"
    finally:
        sys.modules.pop("oracle.task_file", None)
        import oracle

        vars(oracle).pop("task_file", None)


def test_only_the_old_paths_are_aliased():
    for name in ("oracle.no_such_module", "oracle.tasks.nothing", "oracle.taskx"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)
    # Paths that never were public stay gone: no alias hides a stale import in the package itself.
    for name in ("oracle.oracle", "oracle.commands", "oracle._canonical", "oracle.policy_settings"):
        assert name not in MOVED
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)


@pytest.mark.slow
def test_the_package_itself_uses_no_old_path():
    """Every ``oracle.X`` the package, its tests, benchmarks and examples import is a real module or
    a name in one; none is an old path (those are for callers)."""
    import ast

    files = [p for d in ("oracle", "policies", "strategies", "tests", "benchmarks", "examples")
             for p in sorted((ROOT / d).rglob("*.py"))]
    offenders = []
    for path in files:
        if path.name == "test_moved_modules.py" or path.name == "test_evaluator_registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            offenders += [f"{path.relative_to(ROOT)}: {m}" for m in mods if m in MOVED
                          or any(m.startswith(old + ".") for old in MOVED)]
    assert offenders == []


def test_the_old_config_module_names_are_on_the_config_package():
    """``oracle.config`` was a module and is now a package: it keeps every public name it had."""
    import oracle.config as config
    import oracle.config.model as model

    old_names = ["ClaimCheckConfig", "DEFAULT_POLICY_WEIGHTS", "DecisionJudgeConfig", "EscalationConfig",
                 "LLMJudgeConfig", "LOCAL_BASE_URL", "LOCAL_MODEL_ALIAS", "OracleConfig", "Price",
                 "ProviderSettings", "ProvidersConfig", "RoutingConfig", "RubricsConfig", "SYSTEMONE_MODEL_ALIAS",
                 "VerifierConfig", "apply_env_overrides", "is_loopback"]
    for name in old_names:
        assert getattr(config, name) is getattr(model, name), name
    assert sorted(config.__all__) == sorted(old_names)
