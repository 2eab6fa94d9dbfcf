"""Third-party policies, evaluators and CLI commands, found through package entry points.

A package extends oracle-router by declaring entry points (pyproject.toml)::

    [project.entry-points."oracle_router.policies"]
    my_policy = "my_pkg.routing:MyPolicy"          # a policy class (see oracle.BasePolicy)
    [project.entry-points."oracle_router.evaluators"]
    my_eval = "my_pkg.judge:make_my_eval"          # a factory () -> Evaluator
    [project.entry-points."oracle_router.commands"]
    my-cmd = "my_pkg.cli:register"                 # register(subparsers) adds the command

Built-ins never go through here (they are imported directly), and a group is scanned only when
something asks for a name no built-in has (a config naming a policy, ``oracle --help``, an unknown
command), so ``oracle route FILE`` pays nothing for plugins. A plugin that fails to load, or whose
name clashes with a built-in or another plugin, raises ``PluginError`` naming it: never skipped.
"""

from __future__ import annotations

from typing import Any

from oracle.errors import PluginError

POLICIES = "oracle_router.policies"
EVALUATORS = "oracle_router.evaluators"
COMMANDS = "oracle_router.commands"

_LOADED: dict[str, dict[str, Any]] = {}


def load_group(group: str) -> dict[str, Any]:
    """Every entry point of ``group``, loaded (once per process): name -> the object it names."""
    if group in _LOADED:
        return _LOADED[group]
    from importlib.metadata import entry_points

    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for ep in entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
        where = f"{group} plugin {ep.name!r} ({ep.value}, from {dist})"
        if ep.name in out:
            raise PluginError(f"{where}: the name is also declared by {origin[ep.name]}", plugin=ep.name)
        try:
            out[ep.name] = ep.load()
        except Exception as exc:  # any failure to load is reported, with its cause
            raise PluginError(f"{where} failed to load: {type(exc).__name__}: {exc}", plugin=ep.name) from exc
        origin[ep.name] = dist
    _LOADED[group] = out
    return out


def clash(group: str, name: str, what: str) -> PluginError:
    """The error for a plugin whose name a built-in already has."""
    return PluginError(f"{group} plugin {name!r}: a built-in {what} already has this name", plugin=name)
