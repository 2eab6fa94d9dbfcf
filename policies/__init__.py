"""Routing policies, one small module per family, registered by name so config files can name them.

Each policy is an immutable object with ``name``, ``version``, ``weight`` and a pure
``vote(signals)`` (see ``oracle.policies._base.BasePolicy``). The built-in families are imported
directly; third-party policies come from the ``oracle_router.policies`` entry point group
(oracle/_internal/plugins.py), looked up only when a config names a policy no built-in has.
"""

from __future__ import annotations

from typing import Iterable

from oracle.policies._registry import REGISTRY as _REGISTRY
from oracle.policies._registry import register_policy


def registered_policies(names: Iterable[str] = ()) -> dict[str, type]:
    """Name -> policy class: the built-ins, and third-party ones already loaded or needed for
    ``names`` (a name no built-in has loads the entry point group; one that fails is an error)."""
    _load_builtins()
    if any(name not in _REGISTRY for name in names):
        _load_plugins()
    return dict(_REGISTRY)


def _load_builtins() -> None:
    if _BUILTINS_LOADED:
        return
    from oracle.policies import cues, difficulty, evidence, judgment, questions  # noqa: F401 - they register

    _BUILTINS_LOADED.append(True)


_BUILTINS_LOADED: list[bool] = []


def _load_plugins() -> None:
    from oracle._internal.plugins import POLICIES, clash, load_group
    from oracle.errors import PluginError

    for name, cls in load_group(POLICIES).items():
        known = _REGISTRY.get(name)
        if known is not None and known is not cls:
            raise clash(POLICIES, name, "policy")
        if not isinstance(cls, type) or not callable(getattr(cls, "vote", None)):
            raise PluginError(f"{POLICIES} plugin {name!r}: {cls!r} is not a policy class (no vote method)",
                              plugin=name)
        _REGISTRY[name] = cls
