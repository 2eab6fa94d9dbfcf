"""Routing policies, one small module per family, registered by name so config files can name them.

Each policy is a frozen dataclass with ``name``, ``weight`` and a pure ``vote(signals)``.
"""

from __future__ import annotations

import importlib
from typing import Callable, TypeVar

_REGISTRY: dict[str, type] = {}
T = TypeVar("T", bound=type)

_FAMILIES = ("evidence", "questions", "judgment", "cues", "difficulty")


def register_policy(name: str) -> Callable[[T], T]:
    """Class decorator: make a policy available under ``name`` in configs."""

    def deco(cls: T) -> T:
        _REGISTRY[name] = cls
        return cls

    return deco


def registered_policies() -> dict[str, type]:
    for family in _FAMILIES:
        importlib.import_module(f"oracle.policies.{family}")
    return dict(_REGISTRY)
