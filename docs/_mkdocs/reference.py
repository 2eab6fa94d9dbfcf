"""MkDocs hook: one API reference page per public module, generated from the package's own list.

``oracle/__init__.py``'s docstring names the public modules ("Only the names in ``__all__`` are
public, plus the modules ...; anything else may change"). Reading that list here, instead of
writing a page per module by hand, keeps the reference equal to what the package promises: a
module made public or private changes the reference with no edit to the docs. A public package
that exports no ``__all__`` of its own (``oracle.integrations``) is documented through its public
submodules. The pages are added to the nav under "API reference".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SECTION = "API reference"
_MODULE = re.compile(r"(?<![\w.])(oracle(?:\.[A-Za-z_]\w*)+)")


def public_modules(root: Path = ROOT) -> list[str]:
    """``oracle`` and the modules its docstring names as public, in the order named: every
    ``oracle.*`` name after the sentence saying what is public ("... are public, ...") and before
    the one saying what is not ("anything else ..." or "Every other module is private ...")."""
    doc = ast.get_docstring(ast.parse((root / "oracle" / "__init__.py").read_text(encoding="utf-8"))) or ""
    start = doc.find("are public")
    ends = [i for i in (doc.find("anything else", start), doc.find("Every other module", start)) if i != -1]
    if start == -1 or not ends:
        raise ValueError("oracle/__init__.py's docstring no longer says which modules are public "
                         "('... are public ...' followed by 'anything else ...' or 'Every other module ...')")
    names = ["oracle"]
    for name in _MODULE.findall(doc[start:min(ends)]):
        if name not in names and not any(part.startswith("_") for part in name.split(".")):
            names.append(name)
    return names


def _folder(module: str, root: Path) -> Path:
    """Where a module's source lives (the package-dir mapping of pyproject.toml applied)."""
    import tomllib

    package_dir = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    mapping = {k: v for k, v in package_dir.get("package-dir", {}).items() if k}
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in mapping:
            return root.joinpath(mapping[prefix], *parts[i:])
    return root.joinpath(*parts)


def _only_a_docstring(init: Path) -> bool:
    body = ast.parse(init.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)


def reference_modules(root: Path = ROOT) -> list[str]:
    """Every module that gets a page: the public ones, and after a public package whose
    ``__init__`` holds only a docstring (``oracle.integrations``) its public submodules."""
    out: list[str] = []
    for module in public_modules(root):
        out.append(module)
        folder = _folder(module, root)
        if (folder / "__init__.py").is_file() and _only_a_docstring(folder / "__init__.py"):
            out.extend(f"{module}.{path.stem}" for path in sorted(folder.glob("*.py"))
                       if not path.stem.startswith("_") and path.stem != "__init__")
    return list(dict.fromkeys(out))


def _page(module: str) -> str:
    options = "" if module != "oracle" else "\n    options:\n      show_submodules: false\n"
    return f"# `{module}`\n\n::: {module}{options}\n"


def _uri(module: str) -> str:
    return f"reference/{module}.md"


def reference_nav(modules: list[str]) -> list[dict[str, Any]]:
    """The pages grouped by room (``oracle.config.*`` under "oracle.config"); a room of one page is
    that page."""
    rooms: dict[str, list[str]] = {}
    for module in modules:
        rooms.setdefault(".".join(module.split(".")[:2]), []).append(module)
    nav: list[dict[str, Any]] = []
    for room, members in rooms.items():
        members.sort(key=lambda module: module != room)  # the room's own package first
        pages = [{module: _uri(module)} for module in members]
        nav.append(pages[0] if len(pages) == 1 else {room: pages})
    return nav


def on_config(config: Any, **kwargs: Any) -> Any:
    """Add the reference pages to the nav (the nav in mkdocs.yml ends with an empty section)."""
    nav = config.nav or []
    for entry in nav:
        if isinstance(entry, dict) and SECTION in entry:
            entry[SECTION] = reference_nav(reference_modules())
            break
    else:
        raise ValueError(f"mkdocs.yml: the nav has no {SECTION!r} section for the generated pages")
    return config


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    for module in reference_modules():
        files.append(File.generated(config, _uri(module), content=_page(module)))
    return files
