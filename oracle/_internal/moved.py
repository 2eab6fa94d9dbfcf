"""Old names that still work: the module paths from before the package was regrouped, and renamed
functions and classes, each warning once with the name to use instead.

A module that moved is not copied or wrapped: importing its old path returns the very module
object at the new path (one class identity, one registry), found by a meta-path finder reading
``MOVED``. ``import oracle`` installs the finder; nothing is imported until an old path is asked
for. Like the rest of ``oracle._internal`` this imports nothing of the package statically: a new
path is imported by name, only when its old one is.
"""

from __future__ import annotations

import sys
import warnings
from types import ModuleType
from typing import Any

MOVED: dict[str, tuple[str, str]] = {
    # old path: (the module it is now, what to import instead)
    "oracle.task": ("oracle.tasks.task", "oracle.tasks.task"),
    "oracle.task_file": ("oracle.tasks.files", "oracle.tasks.files"),
    "oracle.testspec": ("oracle.tasks.testspec", "oracle.tasks.testspec"),
    "oracle.questions": ("oracle.tasks.questions", "oracle.tasks.questions"),
    "oracle.result": ("oracle.results.result", "oracle.results.result"),
    "oracle.concerns": ("oracle.results.concerns", "oracle.results.concerns"),
    "oracle.provenance": ("oracle.results.provenance", "oracle.results.provenance"),
    "oracle.ledger": ("oracle.results.ledger", "oracle.results.ledger"),
    "oracle.route": ("oracle.routing.route", "oracle.routing.route"),
    "oracle.signals": ("oracle.routing.signals", "oracle.routing.signals"),
    "oracle.policy": ("oracle.routing.policy", "oracle.routing.policy"),
    "oracle.prices": ("oracle.providers.prices", "oracle.providers.prices"),
    "oracle.calibration": ("oracle.config.calibration", "oracle.config.calibration"),
    # The old module held the protocol and the registry; the registry's module has both names
    # (EvaluationContext, the protocol and every old registry function) and is the one registry.
    "oracle.strategy": ("oracle._evaluators", "oracle.strategies.protocol (Evaluator, EvaluationContext) "
                                              "and oracle (register_evaluator)"),
    # The README named oracle.telemetry.use_tracer_provider; its public home is now the integration.
    "oracle.telemetry": ("oracle._telemetry", "oracle.integrations.opentelemetry (use_tracer_provider)"),
}


def renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``; the warning points at the caller of the
    function that calls this (``stacklevel`` 3: the caller of a module ``__getattr__`` or of a
    deprecated method)."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


class _MovedModule:
    """Loader of one old path: hands back the module at the new path, untouched."""

    def __init__(self, old: str, new: str, hint: str) -> None:
        self.old, self.new, self.hint = old, new, hint
        self._spec: Any = None

    def create_module(self, spec: Any) -> ModuleType:
        from importlib import import_module

        # Import first, so a failure of the new module surfaces as itself, not as this alias.
        module = import_module(self.new)
        warnings.warn(f"{self.old} is deprecated; import {self.hint} (it is the same module, moved)",
                      DeprecationWarning, stacklevel=2)  # the import machinery's frames are skipped
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the old path's spec on the shared module object; give it back its own.
        module.__spec__ = self._spec


class MovedFinder:
    """Finds the old paths in ``MOVED`` (and nothing else)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        entry = MOVED.get(fullname)
        if entry is None:
            return None
        from importlib.machinery import ModuleSpec

        loader: Any = _MovedModule(fullname, *entry)  # a Loader by its two methods (importlib.abc not imported)
        return ModuleSpec(fullname, loader)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), ahead of a stale file an old install left."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
