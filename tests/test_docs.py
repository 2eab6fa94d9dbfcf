"""The documentation site builds with ``mkdocs build --strict``, and its API reference is the public
API: every public module once, under its ``oracle.*`` name, policies/ and strategies/ included."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_public_api import PUBLIC_MODULES

ROOT = Path(__file__).resolve().parent.parent


def _hook_module(name: str) -> Any:
    """One of the docs build's own modules (docs/_mkdocs/NAME.py), loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"_docs_{name}", ROOT / "docs" / "_mkdocs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


reference = _hook_module("reference")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _require_mkdocs() -> None:
    """Skip without the docs extra on a developer machine; under CI it must be installed."""
    if _in_ci():
        import mkdocstrings_handlers.python  # noqa: F401
        import material  # noqa: F401
    else:
        for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"the docs extra is not installed ({module}): pip install -e '.[docs]'")


def test_the_reference_documents_the_pinned_public_modules():
    """The pages come from oracle/__init__.py's list; the public-API test pins the same list."""
    modules = reference.reference_modules()
    assert len(modules) == len(set(modules))
    adapters = {f"oracle.integrations.{p.stem}" for p in (ROOT / "oracle" / "integrations").glob("*.py")
                if not p.stem.startswith("_")}
    assert {"oracle.integrations.inspect", "oracle.integrations.pydantic_evals",
            "oracle.integrations.langsmith", "oracle.integrations.deepeval"} <= adapters
    # the pinned list, and the adapters (public as oracle.integrations.*)
    assert set(modules) == PUBLIC_MODULES | {"oracle.integrations"} | adapters
    assert not any(part.startswith("_") for m in modules for part in m.split("."))


@pytest.mark.slow
def test_the_mapped_folders_are_read_once_under_their_oracle_names():
    """policies/ and strategies/ are attached as oracle.policies and oracle.strategies (the
    package-dir mapping), never read as top-level packages of their own."""
    griffe = pytest.importorskip("griffe") if not _in_ci() else __import__("griffe")

    PackageDir = _hook_module("package_dir").PackageDir
    loader = griffe.GriffeLoader(extensions=griffe.load_extensions(PackageDir), search_paths=[str(ROOT)])
    package = loader.load("oracle")
    assert package["policies"].path == "oracle.policies"
    assert package["policies"].filepath == ROOT / "policies" / "__init__.py"
    assert package["strategies.verifier"].path == "oracle.strategies.verifier"
    assert package["strategies.verifier"].filepath == ROOT / "strategies" / "verifier" / "__init__.py"
    for module in reference.reference_modules():
        if module.startswith(("oracle.policies", "oracle.strategies")):
            assert package[module.removeprefix("oracle.")].path == module
    assert set(loader.modules_collection.members) == {"oracle"}
    unresolved, _ = loader.resolve_aliases(external=False)
    assert not {a for a in unresolved if a.startswith(("oracle.policies", "oracle.strategies"))}


@pytest.mark.slow
def test_mkdocs_build_strict_passes(tmp_path):
    _require_mkdocs()
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-5000:]
    assert not re.search(r"^(WARNING|ERROR)\b", log, re.MULTILINE), log[-5000:]
    # A page per part, and a reference page per public module with its members rendered.
    for page in ("tasks", "results", "routing", "verifier", "sandbox", "llm-judge", "decision-judge",
                 "models", "escalation", "batch", "comparisons", "calibration", "integrations", "serve",
                 "cli", "library", "contributing"):
        assert (site / page / "index.html").is_file(), page
    members = {}
    for module in reference.reference_modules():
        html = (site / "reference" / module / "index.html").read_text(encoding="utf-8")
        assert f'id="{module}"' in html, module
        members[module] = f'id="{module}.' in html
    for mapped in ("oracle.policies", "oracle.strategies"):  # the mapped folders' members are rendered
        assert any(has for module, has in members.items() if module.startswith(mapped)), mapped
    top = (site / "reference" / "oracle" / "index.html").read_text(encoding="utf-8")
    for name in _all_of_oracle():
        assert f'id="oracle.{name}"' in top, name


def _all_of_oracle() -> list[str]:
    import ast

    tree = ast.parse((ROOT / "oracle" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("oracle/__init__.py has no __all__")


def test_the_readme_task_is_the_example_file_its_commands_run():
    """The README shows docs/examples/add.yaml in full; its commands (tests/test_docs_commands.py)
    run that file, so the task a reader sees is the task that was run."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    assert (ROOT / "docs" / "examples" / "add.yaml").read_text(encoding="utf-8") in blocks
    assert "docs/examples/add.yaml" in readme


def test_the_verifier_page_shows_the_reference_example_its_command_runs():
    """docs/verifier.md shows docs/examples/author.yaml in full, then the command that evaluates it."""
    page = (ROOT / "docs" / "verifier.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert (ROOT / "docs" / "examples" / "author.yaml").read_text(encoding="utf-8") in blocks
    assert "$ oracle evaluate docs/examples/author.yaml" in page


def test_the_readme_stays_a_quickstart():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, len(lines)


def test_user_docs_name_no_issue_numbers_or_commit_ids():
    """Design history lives in the issues and the log; the pages say what is, not how it came."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bissues? #?\d+|#\d{1,4}\b", text, re.IGNORECASE), page.name
        # 7 to 12 hex digits, letters and digits mixed: an abbreviated commit id (hashes shown in
        # outputs are 16 or 64 long)
        for word in re.findall(r"\b[0-9a-f]{7,12}\b", text):
            assert not (re.search(r"\d", word) and re.search(r"[a-f]", word)), (page.name, word)


def test_the_readme_test_command_installs_what_ci_installs():
    """.ci/run installs the extras the README's second command names, then runs its pytest line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    extras = re.compile(r"pip install (?:-q )?-e '\.\[([^\]]+)\]'")
    command = next(line for line in readme.splitlines() if line.endswith("python3 -m pytest -q -n 2"))
    (readme_extras,) = extras.findall(command)
    (ci_extras,) = extras.findall(ci)
    assert set(readme_extras.split(",")) == set(ci_extras.split(","))
    assert "docs" in readme_extras.split(",")
    assert re.search(r"^python3 -m pytest -q -n 2$", ci, re.MULTILINE)
