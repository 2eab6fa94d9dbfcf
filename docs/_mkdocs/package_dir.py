"""Griffe extension: analyse the subpackages that pyproject.toml maps from other folders.

setuptools' ``package-dir`` installs ``policies/`` and ``strategies/`` (at the top of the repository)
as ``oracle.policies`` and ``oracle.strategies``. Griffe reads packages from the file system and
finds only ``oracle/``, so the mapped folders would be missing from the API reference (or, given as
search paths, be read a second time as top-level ``policies`` and ``strategies``). When the
``oracle`` package is loaded, this loads each mapped folder once and attaches it under its
``oracle.*`` name, so every module is analysed once, under the name users import.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[2]


def mapped_subpackages(root: Path = ROOT) -> dict[str, Path]:
    """``{"oracle.policies": root/"policies", ...}``: the package-dir entries below another package."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir = config["tool"]["setuptools"].get("package-dir", {})
    return {name: (root / folder).resolve() for name, folder in package_dir.items() if "." in name}


class PackageDir(griffe.Extension):
    """Attach each mapped folder to its parent package once the parent is loaded."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for name, folder in sorted(mapped_subpackages().items()):
            parent_path, _, child = name.rpartition(".")
            if parent_path.split(".")[0] != pkg.name or not (folder / "__init__.py").is_file():
                continue
            parent = pkg if parent_path == pkg.name else pkg.get_member(parent_path.split(".", 1)[1])
            if child in parent.members:
                continue
            finder = griffe.ModuleFinder(search_paths=[folder.parent])
            _, package = finder.find_spec(folder.name)
            # A private loader method, the only one that reads a folder as a child of a module
            # already loaded (so its members get their oracle.* paths while they are visited).
            module = loader._load_module(child, package.path, parent=parent)
            parent.set_member(child, module)
