"""Settings from the environment: one scheme, ``ORACLE_<SECTION>__<FIELD>``, plus the short aliases.

Any setting of ``OracleConfig`` can be set by its path, upper- or lower-case, parts joined by a
double underscore::

    ORACLE_ROUTING__THRESHOLD=0.3              ORACLE_PROVIDERS__JUDGE__MODEL=gpt-4o-mini
    ORACLE_DECISION_JUDGE__SAMPLES=7           ORACLE_PROVIDERS__JUDGE__DEADLINE_S=null
    ORACLE_PROVIDERS__PRICES='{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}'

Maps, lists and whole sections take JSON; ``null`` is None. The short variables documented before
are aliases, applied first, so a scheme variable for the same setting wins:

    ORACLE_BASE_URL, ORACLE_MODEL            the judge endpoint and its model
    ORACLE_API_KEY                           the judge's key (the variable's name is stored, not the key)
    ORACLE_DECISION_URL                      a decision endpoint, as its base URL or in full (/systemone, /decisions)
    ORACLE_DECISION_MODEL, ORACLE_DECISION_API_KEY   its model and its key

A model name or a key given for one endpoint never reaches another. This module returns plain
data; the config model validates it with the rest of the config (it hands in its sections' types,
so this reader does not import the model), and a bad value is a ``ConfigError`` naming the
variable (``env_error_names``).

Parsing the scheme is pydantic-settings' ``EnvSettingsSource`` (typed: it knows which fields take
JSON). Importing that package costs about half a second, so it is imported only when a variable of
the scheme is present; ``oracle route`` without one never loads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

PREFIX = "ORACLE_"
DELIMITER = "__"
NULL = "null"
"""The value that means None (``ORACLE_PROVIDERS__JUDGE__DEADLINE_S=null``)."""

ALIASES: dict[str, tuple[str, ...]] = {
    "ORACLE_BASE_URL": ("providers", "judge", "base_url"),
    "ORACLE_MODEL": ("providers", "judge", "model"),
    "ORACLE_DECISION_MODEL": ("providers", "decision", "model"),
}
"""Short variable -> the setting it sets (verbatim). ORACLE_API_KEY, ORACLE_DECISION_API_KEY and
ORACLE_DECISION_URL are read by ``_aliases`` (they set more than one field, or a variable name)."""


@dataclass
class EnvOverrides:
    """Settings read from the environment, nested like the config, and where each came from."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[tuple[str, ...], str] = field(default_factory=dict)
    """Setting path -> the variable that set it."""
    default_decision_kind: bool = False
    """ORACLE_DECISION_URL named no format: System One, unless the config file says otherwise."""

    def put(self, path: tuple[str, ...], value: Any, variable: str) -> None:
        self.data = merge(self.data, _nested(path, value))
        self.sources[path] = variable

    def apply(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` (a config file's) with these settings laid over it."""
        merged = merge(data, self.data)
        if self.default_decision_kind:
            decision = merged["providers"]["decision"]
            decision.setdefault("kind", "systemone")
        return merged


def read_env(environ: Mapping[str, str], sections: Mapping[str, Any]) -> EnvOverrides:
    """The aliases, then the ``ORACLE_<SECTION>__...`` variables for the config's ``sections``
    (section name -> its type, which says which of a variable's values are JSON)."""
    out = EnvOverrides()
    _aliases(environ, out)
    found = scheme_variables(environ, tuple(sections))
    if found:
        out.data = merge(out.data, _scheme(environ, found, sections))
        out.sources.update(found)
    return out


def scheme_variables(environ: Mapping[str, str], sections: tuple[str, ...]) -> dict[tuple[str, ...], str]:
    """Setting path -> variable name for every variable of the scheme present (cheap: no import)."""
    heads = {PREFIX + s.upper(): s for s in sections}
    found: dict[tuple[str, ...], str] = {}
    for name in environ:
        head, sep, rest = name.upper().partition(DELIMITER)
        if head in heads and (not sep or rest):
            parts = tuple(p.lower() for p in rest.split(DELIMITER)) if sep else ()
            found[(heads[head], *parts)] = name
    return found


def _aliases(environ: Mapping[str, str], out: EnvOverrides) -> None:
    for name, path in ALIASES.items():
        if environ.get(name):
            out.put(path, environ[name], name)
    if environ.get("ORACLE_API_KEY"):
        out.put(("providers", "judge", "api_key_env"), "ORACLE_API_KEY", "ORACLE_API_KEY")
    if environ.get("ORACLE_DECISION_API_KEY"):
        out.put(("providers", "decision", "api_key_env"), "ORACLE_DECISION_API_KEY", "ORACLE_DECISION_API_KEY")
    if environ.get("ORACLE_DECISION_URL"):
        base_url, kind = decision_endpoint(environ["ORACLE_DECISION_URL"])
        out.put(("providers", "decision", "base_url"), base_url, "ORACLE_DECISION_URL")
        if kind is not None:
            out.put(("providers", "decision", "kind"), kind, "ORACLE_DECISION_URL")
        else:
            out.default_decision_kind = True


def _scheme(environ: Mapping[str, str], found: dict[tuple[str, ...], str],
            sections: Mapping[str, Any]) -> dict[str, Any]:
    """The scheme's variables parsed by pydantic-settings, typed by the config's own sections (which
    decides what is JSON); values stay raw for the config's validation."""
    from pydantic import create_model
    from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsError

    from oracle.errors import ConfigError

    fields: dict[str, Any] = {name: (annotation, None) for name, annotation in sections.items()}
    shape = create_model("OracleEnvShape", __base__=BaseSettings, **fields)
    source = EnvSettingsSource(shape, case_sensitive=False, env_prefix=PREFIX, env_nested_delimiter=DELIMITER,
                               env_parse_none_str=NULL)
    # Read the mapping given (os.environ in production, a plain dict in tests), not the process's.
    source.env_vars = {k.lower(): (None if v == NULL else v) for k, v in environ.items()}
    try:
        values: dict[str, Any] = source()
    except SettingsError as exc:
        names = [n for n in sorted(found.values()) if not _is_json(environ[n])] or sorted(found.values())
        raise ConfigError(f"{', '.join(names)}: cannot read the value ({exc}); maps, lists and "
                          "whole sections are given as JSON") from None
    return values


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    for part in reversed(path):
        value = {part: value}
    return value  # type: ignore[no-any-return]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` laid over it, maps merged key by key (neither is changed)."""
    out = dict(base)
    for key, value in overrides.items():
        current = out.get(key)
        if isinstance(value, dict):
            out[key] = merge(current if isinstance(current, dict) else {}, value)
        else:
            out[key] = value
    return out


def env_error_names(loc: tuple[Any, ...], sources: dict[tuple[str, ...], str]) -> list[str]:
    """The variables behind a validation error at ``loc``: the one that set it (or a setting above
    it), else those that set anything below it (an error a whole section's validator raised)."""
    path = tuple(str(p) for p in loc)
    for n in range(len(path), 0, -1):
        if path[:n] in sources:
            return [sources[path[:n]]]
    return sorted({v for p, v in sources.items() if p[:len(path)] == path})


_DecisionKind = Literal["decisions", "systemone"]
_DECISION_PATHS: tuple[tuple[str, _DecisionKind], ...] = (("/systemone", "systemone"), ("/decisions", "decisions"))


def decision_endpoint(url: str) -> tuple[str, _DecisionKind | None]:
    """A decision URL given as the base (``.../v1``) or in full (``.../v1/systemone``,
    ``.../v1/decisions``): the base URL, and the wire format when the path names one."""
    url = url.strip().rstrip("/")
    for suffix, kind in _DECISION_PATHS:
        if url.endswith(suffix):
            return url[: -len(suffix)], kind
    return url, None
