"""Reading a config file (YAML, TOML or Python) into plain data, every failure a ``ConfigError``.

Kept apart from the config model, which validates what this returns: ``OracleConfig.load`` imports
this only when it is given a file, and the YAML and TOML parsers load only when a file of their
kind is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from oracle.errors import ConfigError


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a config file; every way it can be unreadable is a ``ConfigError`` naming it (exit 2)."""
    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a config file")
    try:
        data = _parse_config_file(path)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None
    except ValueError as exc:  # a YAML alias bomb or a number past the 4,300-digit limit
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{path}: cannot parse: {exc}") from None
    from oracle._internal.decoded import input_problem
    from oracle.tasks._limits import DEFAULT_LIMITS

    problem = input_problem(data, DEFAULT_LIMITS.max_depth)  # a huge integer could not be hashed
    if problem is not None:
        raise ConfigError(f"{path}: {problem[0]}: {problem[1]}")
    return data


def _parse_config_file(path: Path) -> dict[str, Any]:
    # The YAML and TOML parsers load only when a file of their kind is read.
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        import yaml

        from oracle.tasks._limits import DEFAULT_LIMITS
        from oracle._internal.safe_yaml import load_yaml

        try:
            data = load_yaml(path.read_text(encoding="utf-8"), max_aliases=DEFAULT_LIMITS.max_yaml_aliases,
                             max_depth=DEFAULT_LIMITS.max_depth,
                             max_expanded_bytes=DEFAULT_LIMITS.max_expanded_bytes) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: cannot parse: {exc}") from None
    elif suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: cannot parse: {exc}") from None
    elif suffix == ".py":
        namespace: dict[str, Any] = {}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102
        value = namespace.get("CONFIG")
        if isinstance(value, BaseModel):  # an OracleConfig: its data, validated again by the model
            return value.model_dump(mode="python")
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: a Python config must define CONFIG (a dict or OracleConfig)")
        data = value
    else:
        raise ConfigError(f"{path}: unsupported config type {suffix!r} (use .yaml, .toml or .py)")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping")
    return data
