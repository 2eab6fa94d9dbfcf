"""Routing policies, one small module per family, known by name so config files can name them.

Each policy is an immutable object with ``name``, ``version``, ``weight`` and a pure
``vote(signals)`` (see ``oracle.policies._base.BasePolicy``). The built-in families are imported
directly by this package (they register nothing themselves); ``register_policy`` adds one in code;
third-party policies come from the ``oracle_router.policies`` entry point group
(oracle/_internal/plugins.py), looked up only when a config names a policy no built-in has.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

if __name__ != "oracle.policies":
    # This folder installs as oracle.policies; under another name (``policies``, with the repository
    # root on sys.path) it would be a second registry that configs never see.
    raise ImportError(f"import oracle.policies, not {__name__}: this folder is the package oracle.policies "
                      "(a second copy under another name would hold a registry of its own)")

_REGISTRY: dict[str, type] = {}
T = TypeVar("T", bound=type)


def register_policy(name: str) -> Callable[[T], T]:
    """Class decorator: make a policy available under ``name`` in configs."""

    def deco(cls: T) -> T:
        _REGISTRY[name] = cls
        return cls

    return deco


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
    # Direct imports (a rename fails here and in mypy): the families define their policies and
    # register nothing themselves, so no family imports this package back.
    from oracle.policies.cues import CueBalance
    from oracle.policies.difficulty import Difficulty
    from oracle.policies.evidence import ExecutionEvidence, ReferenceAnswer, ToolUse
    from oracle.policies.judgment import OpenEndedJudgment, PairwisePreference
    from oracle.policies.questions import ClaimCheck, ClosedQuestion

    for cls in (CueBalance, Difficulty, ExecutionEvidence, ReferenceAnswer, ToolUse, OpenEndedJudgment,
                PairwisePreference, ClosedQuestion, ClaimCheck):  # the order the registry always had
        _REGISTRY[cls.name] = cls
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
