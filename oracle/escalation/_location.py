"""Which escalation store a command uses: one rule for every command and the HTTP service.

Why one rule: ``oracle evaluate --store esc.sqlite`` followed by ``oracle escalations list``
used to read another file without saying so. The store is, in order: the ``--store`` given, the
``ORACLE_STORE`` environment variable, the config's ``escalation.store_path`` (which a config file
or ``ORACLE_ESCALATION__STORE_PATH`` may set), else ``DEFAULT_STORE_PATH``. Every hint a command
prints that names another command carries ``--store PATH`` whenever the store is not the default,
so copying the hint reaches the same file.
"""

from __future__ import annotations

import os
import shlex
from typing import Mapping

from oracle.config.model import EscalationConfig, OracleConfig

STORE_ENV = "ORACLE_STORE"
DEFAULT_STORE_PATH: str = EscalationConfig.model_fields["store_path"].default


def resolve_store_path(given: str | None, config: OracleConfig,
                       environ: Mapping[str, str] | None = None) -> str:
    """The store path: ``given``, else ``$ORACLE_STORE``, else the config's (default included)."""
    if given:
        return given
    env = (os.environ if environ is None else environ).get(STORE_ENV, "").strip()
    return env or config.escalation.store_path


def store_flag(path: str) -> str:
    """`` --store PATH`` (shell-quoted) for a hint, or "" for the default store."""
    return "" if path == DEFAULT_STORE_PATH else f" --store {shlex.quote(path)}"
