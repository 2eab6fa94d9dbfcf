"""The name -> policy class table that ``register_policy`` fills and ``registered_policies`` reads.

Apart from ``oracle/policies/__init__.py`` (which imports the built-in families to fill it) so a
policy module registers itself without importing the package that imports it.
"""

from __future__ import annotations

from typing import Callable, TypeVar

REGISTRY: dict[str, type] = {}
T = TypeVar("T", bound=type)


def register_policy(name: str) -> Callable[[T], T]:
    """Class decorator: make a policy available under ``name`` in configs."""

    def deco(cls: T) -> T:
        REGISTRY[name] = cls
        return cls

    return deco
