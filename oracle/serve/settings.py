"""The server's own settings: where it listens, who may call it, and how much one request may take.

Kept apart from ``OracleConfig`` (what an evaluation does) because these are about exposure, and
because every one of them is checked before the server accepts its first connection: a server
that would listen beyond this machine without a token refuses to start (``ServeConfigError``,
exit 2) instead of serving everyone.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

MIB = 1024 * 1024
TOKEN_ENV = "ORACLE_SERVE_TOKEN"
MIN_TOKEN_CHARS = 16
"""A bearer token shorter than this is refused at start: it could be guessed over the network."""


class ServeConfigError(ValueError):
    """The server settings cannot be used (a public bind without a token, an unreadable token file)."""


class ServeSettings(BaseModel):
    """Everything ``oracle serve`` needs beyond the evaluation config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    """Address to bind. Anything but a loopback address needs ``token``."""
    port: int = Field(default=8780, ge=0, le=65535)
    """0 picks a free port (the server names it on stderr when it listens). Not 8765: that is the
    embedded local model's (`oracle model serve`)."""
    token: SecretStr | None = None
    """Bearer token every request but ``/v1/health`` must carry; compared in constant time."""
    max_body_bytes: int = Field(default=16 * MIB, ge=1024)
    """A request body larger than this is refused with 413 while it is being read."""
    request_timeout_s: float = Field(default=300.0, gt=0)
    """A request still running after this gets 504 (a waiting evaluate says which job to poll)."""
    max_concurrency: int = Field(default=8, ge=1)
    """Requests in flight at once; one more gets 503 with ``Retry-After``."""
    max_open_concurrency: int = Field(default=4, ge=1)
    """Requests to the open paths (``/v1/health``) in flight at once, counted apart from the rest."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """A request body not fully received after this gets 408 (a trickled body holds no slot longer)."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A connection that has not sent a complete request head this long after its first byte is closed."""
    max_connections: int = Field(default=256, ge=1)
    """Open connections at once; one more is closed on arrival, so held-open sockets cannot pile up."""
    max_jobs: int = Field(default=8, ge=1)
    """Evaluation jobs (submitted or waited for) running at once; one more gets 503."""
    max_batches: int = Field(default=2, ge=1)
    """Batch runs at once; one more gets 503."""
    keep_jobs: int = Field(default=1000, ge=1)
    """Finished jobs kept for polling; the oldest are forgotten past this."""
    allow_in_process: bool = False
    """Accept tasks with ``execution: in_process`` (the verifier's own opt-in still applies)."""
    store_path: str | None = None
    """Escalation store; None: ``$ORACLE_STORE``, else ``escalation.store_path`` of the config."""
    work_dir: str | None = None
    """Where batch inputs and rows are kept; None: a fresh temporary directory."""
    max_cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The budget of each request (one evaluate, or one batch as a whole), USD; a request may ask for
    less (``?max_cost_usd=``), never more. None: no ceiling."""
    max_calls: int | None = Field(default=None, ge=0)
    """The budget of each request in model requests (retries count, cache hits do not); a request
    may ask for fewer (``?max_calls=``), never more. None: no ceiling."""

    def check(self) -> None:
        """Refuse settings that would expose the server: raises ``ServeConfigError``."""
        if not is_loopback(self.host) and self.token is None:
            raise ServeConfigError(f"--host {self.host} is not a loopback address: set a bearer token "
                                   f"(${TOKEN_ENV} or --token-file) so that only callers who hold it are served")
        if self.token is not None and len(self.token.get_secret_value()) < MIN_TOKEN_CHARS:
            raise ServeConfigError(f"bearer token: at least {MIN_TOKEN_CHARS} characters")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost``; a name or a wildcard address (0.0.0.0, ::) is not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(token_file: str | None, environ: dict[str, str] | None = None) -> SecretStr | None:
    """The bearer token from ``token_file`` (first line), else ``$ORACLE_SERVE_TOKEN``, else None."""
    env = os.environ if environ is None else environ
    if token_file:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ServeConfigError(f"--token-file {token_file}: cannot read: {exc}") from None
        lines = text.splitlines()
        value = lines[0].strip() if lines else ""
        if not value:
            raise ServeConfigError(f"--token-file {token_file}: empty")
        return SecretStr(value)
    value = env.get(TOKEN_ENV, "").strip()
    return SecretStr(value) if value else None
