"""One run record: an arm on one item, in one repeat and one order (a line of ``runs.jsonl``).

The record keeps everything needed to recompute the summary (so a resumed run gives the same
summary as an uninterrupted one) and to audit a single verdict: the options shown in their
order, the whole answer distribution, the chosen option and its raw confidence, the threshold
applied, models requested and answered, sampling requested and applied, latencies, calls, tokens,
cost and any error. ``key`` makes a run unique: a resume skips keys already written.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ARMS = ("verifier", "decision_judge", "llm_judge", "routed", "baseline")
EVALUATOR_ARMS = ("verifier", "decision_judge", "llm_judge")
Order = Literal["given", "reversed"]
RunStatus = Literal["ok", "failed", "abstained", "unparsed", "escalated", "pending", "skipped", "n/a"]


def run_key(arm: str, item_id: str, repeat: int, order: str) -> str:
    return f"{arm}|{item_id}|{repeat}|{order}"


class RunRecord(BaseModel):
    """What one arm said about one item in one repeat and order."""

    model_config = ConfigDict(extra="forbid")

    key: str
    run_id: str
    """The ``oracle compare`` process that wrote the record (a resumed run has another)."""
    arm: str
    item_id: str
    repeat: int
    order: Order
    status: RunStatus
    """The evaluation's status; ``n/a`` when the arm cannot judge this item (``reason`` says why)."""
    reason: str | None = None
    kinds: list[str] = Field(default_factory=list)
    """Label kinds this record's verdict is scored on (see oracle/comparison/_arms.py)."""
    evaluator: str | None = None
    """The evaluator that produced the verdict (for ``routed``: the one the router chose)."""
    route_confidence: float | None = None
    reused_from: str | None = None
    """routed: the key of the same-run evaluator record whose verdict it reports (not run twice)."""
    options_shown: dict[str, list[str]] = Field(default_factory=dict)
    """``candidates`` -> candidate ids in the order shown; question id -> its options in order."""
    distribution: dict[str, dict[str, float]] = Field(default_factory=dict)
    """question id (or ``candidates``) -> the full probability (or score) per option."""
    chosen: dict[str, str] = Field(default_factory=dict)
    """question id -> chosen option."""
    confidence: dict[str, float | None] = Field(default_factory=dict)
    """question id (or ``candidates``) -> the raw probability of the chosen option."""
    top: str | None = None
    """The arm's top-1 candidate (first of its ranking)."""
    ranking: list[str] = Field(default_factory=list)
    passed: dict[str, bool | None] = Field(default_factory=dict)
    """Would-pass verdict per candidate under ``threshold``; None: no verdict for that candidate."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    threshold: float | None = None
    label_in_options: bool | None = None
    """Whether every labelled answer / preferred candidate was among the options shown."""
    model_requested: str | None = None
    models_answered: list[str] = Field(default_factory=list)
    provider_fallback: str = "none"
    """Which fallback provider answered; no fallback exists today, so always ``none``."""
    sampling_requested: dict[str, Any] = Field(default_factory=dict)
    sampling_applied: dict[str, Any] = Field(default_factory=dict)
    call_latency_ms: float | None = None
    """Time inside model calls (summed), as the provider clients measured it."""
    latency_ms: float | None = None
    """Whole evaluation, wall clock."""
    within_timeout: bool = True
    """False when the evaluation took longer than ``--timeout-s``: its verdict never counts as correct."""
    calls: int | None = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    """What the run's answers cost (None when any call's price is unknown, never a silent 0). Calls
    answered from the response cache count at the cost first paid, as they do in ``calls``, so a
    rerun from the cache reports the same figures; ``spent_usd`` is what this run spent."""
    cached_calls: int = 0
    """Model calls answered from the response cache (no request sent)."""
    spent_usd: float | None = None
    """What this run spent on model calls (a cache hit costs 0); None: unknown or not recorded."""
    error: dict[str, str] | None = None
    pairs: list[dict[str, Any]] = Field(default_factory=list)
    """LLM judge: each pair it judged in both orders, ``{"a", "b", "seats": [seat won with a
    first, seat won with b first]}`` (seat ``A`` = shown first, None = unread). The bias report reads
    it (oracle/comparison/_bias.py); records written before it existed load with none."""

    def verdict_signature(self) -> tuple[Any, ...]:
        """What counts as "the verdict" when comparing repeats and orders."""
        return (self.status if self.status in ("failed", "n/a") else "",
                self.top, tuple(sorted(self.passed.items())), tuple(sorted(self.chosen.items())))
