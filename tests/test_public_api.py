"""The public API is small and pinned: a rename here is a breaking change."""

import json
import subprocess
import sys
from pathlib import Path

import oracle

ROOT = Path(__file__).resolve().parent.parent

# Adding a public name means adding it here, to oracle.__all__ and to oracle._WHERE.
EXPECTED = {"Escalation", "EvaluationResult", "Oracle", "OracleConfig", "OracleError", "OracleResult",
            "Policy", "Route", "Status", "Evaluator", "Task", "Trajectory",
            # errors a library caller catches (README "Errors")
            "ConfigError", "PluginError", "TaskValidationError",
            # what a policy or an evaluator is written against
            "BasePolicy", "EvaluationContext", "ProviderPool", "Signals", "Vote", "register_policy",
            "register_evaluator",
            # research comparisons (oracle/comparison/)
            "acompare", "compare"}


def test_public_names_are_exactly_the_documented_set():
    assert set(oracle.__all__) == EXPECTED
    assert oracle.__all__ == sorted(oracle.__all__, key=lambda n: (n[0].islower(), n))
    for name in EXPECTED:
        value = getattr(oracle, name)
        assert value is not None and (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_vars_of_the_package_hold_only_the_public_names():
    """Like httpx's exported-members test: after resolving every public name, anything public in
    ``vars(oracle)`` is in ``__all__`` or is a submodule Python bound there on import; ``dir``
    shows only ``__all__``; a fresh ``import oracle`` binds no public name at all."""
    code = ("import json, types, oracle\n"
            "fresh = sorted(n for n in vars(oracle) if not n.startswith('_'))\n"
            "for n in oracle.__all__: getattr(oracle, n)\n"
            "names = {n: isinstance(v, types.ModuleType) and v.__name__ == 'oracle.' + n\n"
            "         for n, v in vars(oracle).items() if not n.startswith('_')}\n"
            "print(json.dumps({'fresh': fresh, 'names': names, 'dir': dir(oracle)}))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["fresh"] == []
    not_exported = {n for n, is_submodule in got["names"].items() if n not in EXPECTED and not is_submodule}
    assert not_exported == set(), not_exported
    assert EXPECTED <= set(got["names"])
    assert got["dir"] == sorted(EXPECTED)


def test_status_names_are_the_contract():
    assert [s.value for s in oracle.Status] == ["ok", "failed", "abstained", "unparsed", "escalated",
                                                "pending"]


def test_installed_package_claims_only_the_oracle_import_name(tmp_path):
    """`policies` and `strategies` are other projects' names on PyPI: they install as oracle.*."""
    import subprocess
    import sys

    code = ("import importlib.util, sys\n"
            "import oracle.policies, oracle.strategies.verifier\n"
            "print(importlib.util.find_spec('policies'), importlib.util.find_spec('strategies'))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('policies', 'strategies')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["None None", "[]"], out.stdout + out.stderr


PUBLIC_MODULES = {"oracle", "oracle.config.model", "oracle.errors", "oracle.tasks.task", "oracle.tasks.files", "oracle.results.result",
                  "oracle.routing.route", "oracle.routing.signals", "oracle.strategies.protocol", "oracle.routing.policy", "oracle.policies",
                  "oracle.results.concerns", "oracle.results.provenance", "oracle.results.ledger", "oracle.providers.prices", "oracle.providers", "oracle.local_model"}
"""The modules oracle/__init__.py documents as public (plus oracle.integrations.*)."""


def test_examples_use_only_the_public_api():
    import ast

    scripts = sorted((ROOT / "examples").rglob("*.py"))
    assert scripts
    for script in scripts:
        source = script.read_text()
        assert "sys.path" not in source, f"{script}: edits sys.path"
        for node in ast.walk(ast.parse(source, str(script))):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                if module.split(".")[0] != "oracle":
                    continue
                public = module in PUBLIC_MODULES or module.startswith("oracle.integrations.")
                assert public, f"{script.relative_to(ROOT)}: imports {module}, not a public module"
                if isinstance(node, ast.ImportFrom):
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{script.relative_to(ROOT)}: imports private names {private}"
