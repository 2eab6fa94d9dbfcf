"""Pure retry rules: Retry-After parsing, backoff bounds, and the providers' public names."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import oracle.providers as providers
from oracle.providers._retry import RetryPolicy, is_retryable_status, parse_retry_after


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_is_capped_and_retry_after_is_a_floor():
    policy = RetryPolicy(max_retries=10, backoff_base_s=1.0, backoff_max_s=4.0)
    rng = random.Random(0)
    assert all(2.0 <= policy.backoff_s(9, rng) <= 4.0 for _ in range(100))
    assert policy.delay_s(0, 3.0, rng) >= 3.0


def test_retryable_statuses():
    assert all(is_retryable_status(s) for s in (429, 500, 502, 503, 504, 529))
    assert not any(is_retryable_status(s) for s in (400, 401, 403, 404, 422))


def test_public_names_are_exactly_all():
    public = {n for n in dir(providers) if not n.startswith("_")}
    modules = {"anthropic", "clients", "decisions", "openai_chat", "pool", "prices", "types"}
    assert public - modules == set(providers.__all__)
