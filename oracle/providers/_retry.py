"""Retry decisions as pure functions: which failures to retry and how long to wait.

Nothing here sends or sleeps. The call flow in ``_flow.py`` asks these functions what to do next,
so the same rules apply to the sync and async clients, and tests can check them without a clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
"""408/425 request timeouts, 409 conflicts some gateways use for lock contention, 429 rate limit,
5xx server trouble and 529 (Anthropic "overloaded"). Any other 4xx is the caller's fault."""


@dataclass(frozen=True)
class RetryPolicy:
    """How many extra attempts, and the exponential backoff between them (seconds)."""

    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 20.0

    def backoff_s(self, retry_index: int, rng: random.Random) -> float:
        """Exponential backoff with jitter for the ``retry_index``-th retry (0-based).

        "Equal jitter": half the exponential step is fixed, half random, so retries from many
        concurrent callers spread out but never collapse to zero wait.
        """
        step = min(self.backoff_max_s, self.backoff_base_s * (2 ** retry_index))
        return step / 2 + rng.uniform(0, step / 2)

    def delay_s(self, retry_index: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Wait before the next attempt: the backoff, but never less than a Retry-After."""
        delay = self.backoff_s(retry_index, rng)
        if retry_after_s is not None:
            delay = max(delay, retry_after_s)
        return delay


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return max(0.0, seconds)
