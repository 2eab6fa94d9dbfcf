"""An on-disk response cache (SQLite) for reproducible reruns.

The key is a sha256 over the canonical request: endpoint kind, URL and the exact JSON body sent.
Headers (and so API keys) never enter the key or the file. Only successfully parsed replies are
stored, as the reply model's JSON, so a hit needs no network and no re-parse of a wire format.
One connection guarded by a lock serves both the sync and the async clients: a lookup is a
sub-millisecond local read, cheaper than handing it to a thread.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from oracle._internal.canonical import sha256_json

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    endpoint_kind TEXT NOT NULL,
    reply_json TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(endpoint_kind: str, url: str, body: dict[str, Any]) -> str:
    return sha256_json({"endpoint_kind": endpoint_kind, "url": url, "body": body})


class ResponseCache:
    """Key -> reply JSON in one SQLite file (created with its parent directory if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT reply_json FROM responses WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, endpoint_kind: str, reply_json: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                             (key, endpoint_kind, reply_json, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
