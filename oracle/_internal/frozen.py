"""A frozen pydantic base whose derived values (hashes) are computed once and never go stale."""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from pydantic import BaseModel


class FrozenWithCache(BaseModel):
    """Subclasses list their ``cached_property`` names in ``_cached``; a copy drops them.

    The model is frozen, so a cached hash stays right for the object's life; only ``model_copy``
    with ``update`` can make a different object from the same ``__dict__``.
    """

    _cached: ClassVar[tuple[str, ...]] = ()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        copy = super().model_copy(update=update, deep=deep)
        for name in self._cached:
            copy.__dict__.pop(name, None)
        return copy
