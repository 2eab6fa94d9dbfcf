"""The host end of a repository run's report pipe: drain it while the run lasts, then verify it.

Why a thread: the test process writes a frame per test; a pipe holds 64 KiB, so someone must read
while it runs or pytest blocks on a full pipe. The frames are checked only after the run: each
line's HMAC over its sequence number and body, keyed by this run's secret (``runtime/repo_report.py``
writes them). One bad frame (a guessed fd written to, a torn line, a frame out of order) and the
report is ``tampered``: the caller trusts none of it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import dataclass, field

MAX_REPORT_BYTES = 32 * 1024 * 1024


@dataclass
class Frames:
    """What the pipe said: the verified frames in order, and why the rest is untrusted, if it is."""

    frames: list[dict] = field(default_factory=list)
    tampered: str | None = None


class ReportPipe:
    """A pipe whose write end the sandboxed run inherits; ``key`` authenticates its frames."""

    def __init__(self) -> None:
        self.key = secrets.token_bytes(32)
        self.read_fd, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, False)  # passed explicitly (pass_fds), never by accident
        self._data = bytearray()
        self._overflow = False
        self._thread = threading.Thread(target=self._drain, name="repo-report", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            if len(self._data) + len(chunk) > MAX_REPORT_BYTES:
                self._overflow = True
                continue
            self._data += chunk

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def finish(self, timeout_s: float = 5.0) -> Frames:
        """After the run (every process of it gone): EOF, then the verified frames."""
        self.close_write()
        self._thread.join(timeout_s)
        os.close(self.read_fd)
        if self._overflow:
            return Frames(tampered=f"the report passed {MAX_REPORT_BYTES} bytes")
        return verify(bytes(self._data), self.key)


def verify(data: bytes, key: bytes) -> Frames:
    out = Frames()
    lines = data.split(b"\n")
    if lines and lines[-1]:
        return Frames(tampered=f"the report ends in a torn frame: {lines[-1][:80]!r}")
    for seq, line in enumerate(lines[:-1]):
        tag, _, body = line.partition(b" ")
        want = hmac.new(key, str(seq).encode() + b"\0" + body, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(tag, want):
            out.tampered = f"frame {seq} of the report is not authentic: {line[:80]!r}"
            return out
        try:
            frame = json.loads(body)
        except ValueError:
            out.tampered = f"frame {seq} of the report is not JSON"
            return out
        if not isinstance(frame, dict) or not isinstance(frame.get("op"), str):
            out.tampered = f"frame {seq} of the report has no op"
            return out
        out.frames.append(frame)
    return out
