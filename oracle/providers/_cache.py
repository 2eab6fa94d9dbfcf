"""An on-disk response cache (SQLite) for reproducible reruns.

The key is a sha256 over the canonical request: endpoint kind, URL, the exact JSON body sent and
the request's ``cache_salt`` (never sent: the repeat index, the run's repeat, the seed), so k
sampled repeats of one prompt are k entries, and a rerun gets each one back. A salt that is None,
empty, or holds only defaults (None or 0) keys exactly as an unsalted request did before salts
existed, so caches written then stay valid. Headers (and so API keys) never enter the key or the
file. Only successfully parsed replies are stored, as the reply model's JSON (text, usage,
logprobs, the cost first paid, provenance), so a hit needs no network and no re-parse of a wire
format.

One file may be shared by several clients and several processes (two comparisons sharing
``--cache DIR``): WAL journaling lets readers run beside a writer, and a busy timeout makes a
writer wait for another's short transaction instead of failing. A file that is not a usable SQLite
database (corrupt, another file, unreadable, read-only) is refused when opened, with a
``ConfigError`` naming its path: silently answering every call again would spend what the cache
was there to save. A single stored entry that no longer reads as a reply (written by another
version) is a miss with a warning, and the fresh reply replaces it.

One connection per client, guarded by a lock, serves both the sync and the async clients: a lookup
is a sub-millisecond local read, cheaper than handing it to a thread.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle._internal.canonical import sha256_json
from oracle._internal.file_lock import FileLock
from oracle.errors import ConfigError

if TYPE_CHECKING:
    from oracle.config.model import OracleConfig

CACHE_FILE = "responses.sqlite"
"""The file a cache directory holds (``oracle compare --cache DIR``: DIR/responses.sqlite)."""
BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's transaction on the same file before failing."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    endpoint_kind TEXT NOT NULL,
    reply_json TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def normalized_salt(salt: dict[str, Any] | None) -> dict[str, Any]:
    """The salt's entries that tell requests apart: None and 0 (repeat 0, no seed) are defaults."""
    if not salt:
        return {}
    return {k: v for k, v in salt.items() if v is not None and not (isinstance(v, (int, float)) and v == 0)}


def cache_key(endpoint_kind: str, url: str, body: dict[str, Any], salt: dict[str, Any] | None = None) -> str:
    """sha256 of the request; without a (non-default) salt exactly the key of the unsalted format."""
    material: dict[str, Any] = {"endpoint_kind": endpoint_kind, "url": url, "body": body}
    salt = normalized_salt(salt)
    if salt:
        material["salt"] = salt
    return sha256_json(material)


class ResponseCache:
    """Key -> reply JSON in one SQLite file (created with its parent directory if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Opening is serialized across processes (a flock beside the file): the switch to WAL
            # and the first schema write of two processes opening a new file can answer "database
            # is locked" without SQLite's busy handler being asked. Once in WAL, the handler works.
            opening = FileLock(self.path.with_name(self.path.name + ".lock"), BUSY_TIMEOUT_S,
                               lambda path, s: sqlite3.OperationalError(f"{path} held for over {s:.0f} s"))
            with opening:
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                           timeout=BUSY_TIMEOUT_S)
                try:
                    self._db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
                    self._setup()
                except sqlite3.Error:
                    self._db.close()
                    raise
        except (OSError, sqlite3.Error) as exc:
            raise self._unusable(exc) from None

    def _setup(self) -> None:
        """WAL mode, the table, a read of its columns; a busy answer (another process's writer, outside
        the opening lock) is retried until the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        pause = 0.01
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(_SCHEMA)
                self._db.execute("SELECT key, endpoint_kind, reply_json, created_at FROM responses LIMIT 1").fetchall()
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    def _unusable(self, exc: BaseException) -> ConfigError:
        return ConfigError(f"cache_path: the response cache {self.path} cannot be used ({exc}); delete or move "
                           "the file, point cache_path (or --cache) elsewhere, or turn the cache off (--no-cache)")

    def get(self, key: str) -> str | None:
        try:
            with self._lock:
                row = self._db.execute("SELECT reply_json FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        return row[0] if row else None

    def put(self, key: str, endpoint_kind: str, reply_json: str) -> None:
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                                 (key, endpoint_kind, reply_json, time.time()))
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def check_cache(path: str | Path) -> None:
    """Open and close the cache at ``path``: a run checks its cache before its first model call."""
    ResponseCache(path).close()


def config_with_cache(config: OracleConfig, cache_file: str | Path | None, *, override: bool) -> OracleConfig:
    """``config`` with every provider section (judge, decision, each ``providers.endpoints`` entry)
    caching in ``cache_file``; None turns every section's cache off.

    ``override`` False: a section whose own ``cache_path`` is set keeps it (a run's default cache
    fills in only where the user chose none). ``config_hash`` is the same either way: the hash
    leaves every ``cache_path`` out."""
    value = None if cache_file is None else str(cache_file)

    def place(section: Any) -> Any:
        if section is None or (not override and value is not None and section.cache_path is not None):
            return section
        return section.model_copy(update={"cache_path": value})

    providers = config.providers
    updated = providers.model_copy(update={
        "judge": place(providers.judge), "decision": place(providers.decision),
        "endpoints": {name: place(s) for name, s in providers.endpoints.items()}})
    return config.model_copy(update={"providers": updated})
