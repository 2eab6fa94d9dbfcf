"""Shared shape of a policy: a name, a version, the signals it reads, and its typed settings.

The settings (weight and every threshold and spread the policy votes with) come from
``routing.policies`` in the config, so they are in the config hash. ``version`` names the vote
logic: any change that can change a vote on the same signals and settings bumps it, and
tests/golden/policies/<name>@<version>.json pins the votes of each version.
"""

from __future__ import annotations

from typing import Any, ClassVar

from oracle.routing.settings import PolicySettings, Spread
from oracle.routing.route import Vote


class BasePolicy:
    """Subclasses set ``name``, ``version``, ``reads`` and ``settings_type`` and implement ``vote``.

    Built from settings (``Policy(settings)``) or, for a quick test, from fields of its settings
    (``Policy(weight=2)``). Immutable once built.
    """

    name: ClassVar[str] = "base"
    version: ClassVar[str] = "1"
    reads: ClassVar[tuple[str, ...]] = ()
    settings_type: ClassVar[type[PolicySettings]] = PolicySettings

    __slots__ = ("settings", "weight", "_shares")
    settings: PolicySettings
    weight: float
    _shares: dict[str, dict[str, float]]

    def __init__(self, settings: PolicySettings | None = None, **fields: Any) -> None:
        if settings is None:
            settings = self.settings_type(**fields)
        elif fields:
            raise TypeError("give settings or its fields, not both")
        elif not isinstance(settings, self.settings_type):
            settings = self.settings_type.model_validate(settings.model_dump(exclude_unset=True))
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "weight", settings.weight)
        # Each spread normalized once here rather than on every vote.
        object.__setattr__(self, "_shares", {
            field: value.shares() for field, value in dict(settings).items() if isinstance(value, Spread)})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings!r})"

    def spec(self) -> dict[str, Any]:
        """Name, version, weight, and the settings that differ from the policy's defaults."""
        changed = self.settings.model_dump(mode="json", exclude_defaults=True)
        changed.pop("weight", None)
        changed.pop("enabled", None)
        out: dict[str, Any] = {"name": self.name, "version": self.version, "weight": self.weight}
        if changed:
            out["settings"] = changed
        return out

    def _vote(self, reason: str, spread: str) -> Vote:
        """A vote with the named spread of the settings."""
        return Vote(dict(self._shares[spread]), reason, self.reads)
