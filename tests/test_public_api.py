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
            "acompare", "compare",
            # budgets (oracle/providers/budget.py)
            "Budget", "BudgetExhausted"}


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
                                                "pending", "skipped"]


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


PUBLIC_MODULES = {
    "oracle", "oracle.errors",
    "oracle.config", "oracle.config.model", "oracle.config.calibration",
    "oracle.tasks", "oracle.tasks.task", "oracle.tasks.testspec", "oracle.tasks.questions", "oracle.tasks.files",
    "oracle.tasks.environment", "oracle.tasks.repository", "oracle.tasks.patch_text",
    "oracle.results", "oracle.results.result", "oracle.results.concerns", "oracle.results.provenance",
    "oracle.results.ledger", "oracle.results.verdict",
    "oracle.routing", "oracle.routing.signals", "oracle.routing.policy", "oracle.routing.route",
    "oracle.routing.settings",
    "oracle.policies", "oracle.policies.cues", "oracle.policies.difficulty", "oracle.policies.evidence",
    "oracle.policies.judgment", "oracle.policies.questions",
    "oracle.strategies", "oracle.strategies.protocol",
    "oracle.providers", "oracle.providers.clients", "oracle.providers.pool", "oracle.providers.types",
    "oracle.providers.openai_chat", "oracle.providers.anthropic", "oracle.providers.decisions",
    "oracle.providers.prices", "oracle.providers.budget",
    "oracle.escalation", "oracle.escalation.human", "oracle.escalation.store", "oracle.escalation.resume",
    "oracle.comparison", "oracle.comparison.api", "oracle.comparison.summary", "oracle.comparison.records",
    "oracle.integrations", "oracle.integrations.sample", "oracle.integrations.inspect",
    "oracle.integrations.pydantic_evals", "oracle.integrations.langsmith", "oracle.integrations.deepeval",
    "oracle.integrations.opentelemetry",
    "oracle.local_model",
}
"""The public modules, as oracle/__init__.py lists them. Adding one is a promise: add it to both."""

PRIVATE_PACKAGES = {"oracle.batch", "oracle.calibrate", "oracle.cli", "oracle.repo", "oracle.rubrics", "oracle.sandbox",
                    "oracle.serve", "oracle.view", "oracle.strategies.decision_judge", "oracle.strategies.llm_judge",
                    "oracle.strategies.verifier"}
"""Packages private as a whole (their docstring starts with "Private"), rather than file by file."""

_MAPPED = {"policies": "oracle.policies", "strategies": "oracle.strategies"}
"""Repository folders installed under another name (pyproject.toml, package-dir)."""


def _source_modules() -> dict[str, Path]:
    """Every module of the installed package, by its ``oracle.`` name, from the repository's files."""
    found: dict[str, Path] = {}
    for top, package in (("oracle", "oracle"), *_MAPPED.items()):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT / top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _docstring(path: Path) -> str:
    import ast

    return ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""


def _private_by_rule(module: str, modules: dict[str, Path]) -> bool:
    """An underscore starts its name or a parent's, or a parent package (or itself) is one of the
    private packages, whose docstring says so."""
    parts = module.split(".")
    if any(p.startswith("_") for p in parts[1:]):
        return True
    prefixes = {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return any(p in PRIVATE_PACKAGES and _docstring(modules[p]).startswith("Private") for p in prefixes)


def test_every_module_is_public_and_pinned_or_private_by_the_rule():
    modules = _source_modules()
    assert len(modules) > 150 and "oracle.strategies.verifier.strategy" in modules  # the walk sees them all
    assert PUBLIC_MODULES <= set(modules), PUBLIC_MODULES - set(modules)
    assert PRIVATE_PACKAGES <= set(modules), PRIVATE_PACKAGES - set(modules)
    unclear = sorted(m for m in modules if m not in PUBLIC_MODULES and not _private_by_rule(m, modules))
    assert unclear == [], f"neither pinned public nor private by the rule: {unclear}"
    both = sorted(m for m in PUBLIC_MODULES if _private_by_rule(m, modules))
    assert both == [], f"pinned public but private by the rule: {both}"
    for package in PRIVATE_PACKAGES:
        assert _docstring(modules[package]).startswith("Private"), package
    for module in PUBLIC_MODULES:
        assert not _docstring(modules[module]).startswith("Private"), module
        assert _docstring(modules[module]).strip(), f"{module} has no docstring"


def test_the_package_docstring_lists_exactly_the_public_modules():
    import re

    doc = oracle.__doc__ or ""
    block = doc.split("(pinned by tests/test_public_api.py):", 1)[1].split("Every other module is private", 1)[0]
    listed = set(re.findall(r"\boracle(?:\.[a-z][a-z_]*)+", block))
    assert listed == PUBLIC_MODULES - {"oracle"}
    private = set(re.findall(r"``(oracle\.[a-z_.]+)``", doc.split("Every other module is private", 1)[1]))
    assert PRIVATE_PACKAGES <= private


def test_the_private_rule_is_what_the_test_says():
    """The rule itself, on names that exist and on made-up ones."""
    modules = _source_modules()
    assert _private_by_rule("oracle._oracle", modules)
    assert _private_by_rule("oracle.routing._chain", modules)
    assert _private_by_rule("oracle.strategies._judging.faults", modules)
    assert _private_by_rule("oracle.sandbox.runtime.wire", modules)  # inside a private package
    assert _private_by_rule("oracle.cli.main", modules)
    assert not _private_by_rule("oracle.routing.route", modules)
    assert not _private_by_rule("oracle.comparison.api", modules)
    assert not _private_by_rule("oracle.strategies.protocol", modules)


def test_the_repository_folders_import_only_under_their_oracle_names():
    """With the repository root on sys.path (as under pytest) ``policies`` and ``strategies`` would
    be a second copy of each registry and class: importing them so fails, saying what to import."""
    code = ("import importlib, json, sys\n"
            "assert sys.path[0] == ''\n"  # the working directory, the repository root, comes first
            "out = {}\n"
            "for name in ('policies', 'strategies', 'policies.cues', 'strategies.verifier', 'strategies.protocol'):\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "        out[name] = 'imported'\n"
            "    except ImportError as exc:\n"
            "        out[name] = str(exc)\n"
            "out['left'] = sorted(m for m in sys.modules if m.split('.')[0] in ('policies', 'strategies'))\n"
            "import oracle.policies, oracle.strategies.protocol\n"
            "out['real'] = [oracle.policies.__name__, oracle.strategies.protocol.__name__]\n"
            "print(json.dumps(out))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for name in ("policies", "policies.cues"):
        assert got[name].startswith("import oracle.policies, not policies"), got[name]
    for name in ("strategies", "strategies.verifier", "strategies.protocol"):
        assert got[name].startswith("import oracle.strategies, not strategies"), got[name]
    assert got["left"] == []
    assert got["real"] == ["oracle.policies", "oracle.strategies.protocol"]


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
                public = module in PUBLIC_MODULES
                assert public, f"{script.relative_to(ROOT)}: imports {module}, not a public module"
                if isinstance(node, ast.ImportFrom):
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{script.relative_to(ROOT)}: imports private names {private}"


def test_documented_names_have_public_homes():
    """The README's tracing scope and JavaScript's ``undefined`` are reachable through public
    modules, as the very objects the private code uses, and naming them loads nothing heavy:
    ``oracle.tasks.testspec`` names ``UNDEFINED`` without importing the sandbox, and the
    OpenTelemetry integration imports no OpenTelemetry."""
    code = ("import json, sys\n"
            "import oracle.tasks.testspec as spec, oracle.integrations.opentelemetry as otel\n"
            "before = [m for m in ('oracle.sandbox', 'asyncio', 'opentelemetry') if m in sys.modules]\n"
            "from oracle.tasks.testspec import UNDEFINED, Undefined\n"
            "from oracle.sandbox.runtime import wire\n"
            "import oracle._telemetry as tel\n"
            "print(json.dumps({'before': before, 'same': [UNDEFINED is wire.UNDEFINED, Undefined is wire.Undefined,\n"
            "                  otel.use_tracer_provider is tel.use_tracer_provider],\n"
            "                  'undefined': [repr(UNDEFINED), bool(UNDEFINED), UNDEFINED == None],\n"
            "                  'all': otel.__all__, 'missing': hasattr(spec, 'NOPE')}))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got == {"before": [], "same": [True, True, True], "undefined": ["undefined", False, False],
                   "all": ["use_tracer_provider"], "missing": False}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]  # the README, or its pages in docs/
    text = "\n".join(p.read_text() for p in pages if p.is_file())
    assert "oracle._telemetry" not in text and "wire.UNDEFINED" not in text
    assert "oracle.integrations.opentelemetry" in text and "oracle.tasks.testspec.UNDEFINED" in text
