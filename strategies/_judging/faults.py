"""Judge calls that fail because of one candidate: that candidate fails alone, the others are judged.

Why: both judges send each candidate's text in its own model calls (pointwise, one pair of a
tournament, a decision judge's questions about one candidate). A call can fail because of what
that candidate wrote: an answer past the model's context, text the endpoint refuses, a 4xx naming
the input. Such a failure used to fail the whole evaluation, so one candidate left every other one
unjudged. Which faults are the candidate's:

- ``ProviderHTTPError`` with a status that names the request's content (``CANDIDATE_STATUSES``:
  400 bad request, e.g. context length exceeded, 413 payload too large, 414, 422 unprocessable,
  451 refused for its content);
- any non-``OracleError`` exception raised while building or reading that candidate's call (its
  text does not encode, nests too deeply, ...).

- a 5xx left after the retries: a server error on one candidate's call (an input that crashes the
  model server) must not sink the others; when the server is down for everyone, every call fails
  and so does the evaluation (below).

Everything else is ours or the provider's and still fails the evaluation at once, cancelling the
calls in flight: timeouts, rate limits, connection failures, 401/403/404 (the endpoint or key is
wrong for everyone), unreadable 2xx bodies, configuration errors. When every candidate's calls
failed, even for candidate faults, the evaluation fails with the first error: nothing was judged.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, TypeVar

from oracle.results.concerns import CandidateUnjudged, ErrorEvidence, UnjudgedEvidence
from oracle.errors import OracleError, ProviderHTTPError, exception_text

T = TypeVar("T")

CANDIDATE_STATUSES = frozenset({400, 413, 414, 422, 451})
"""HTTP statuses that say the request's content was refused (see the module docstring)."""
MESSAGE_LIMIT = 300


def caused_by_candidate(exc: BaseException) -> bool:
    """Whether a failed call is the candidate's fault (see the module docstring)."""
    if isinstance(exc, ProviderHTTPError):
        return exc.status in CANDIDATE_STATUSES or 500 <= (exc.status or 0) <= 599
    if isinstance(exc, OracleError):
        return False
    return isinstance(exc, Exception)


def error_info(exc: BaseException) -> dict[str, Any]:
    """What a result records about a failed call: type, message (cut, printable) and HTTP status."""
    text = exception_text(exc, MESSAGE_LIMIT)
    return {"type": type(exc).__name__, "message": text or type(exc).__name__,
            "status": getattr(exc, "status", None)}


async def contain(work: Callable[[], Awaitable[T]], on_fault: Callable[[BaseException], T],
                  errors: list[BaseException]) -> T:
    """``work()``; a fault caused by the candidate becomes ``on_fault(exc)`` (and is kept in
    ``errors``), anything else propagates."""
    try:
        return await work()
    except Exception as exc:
        if not caused_by_candidate(exc):
            raise
        errors.append(exc)
        return on_fault(exc)


def raise_if_nothing_judged(judged: int, errors: list[BaseException]) -> None:
    """Every candidate's (or pair's) calls failed: the evaluation fails with the first error."""
    if judged == 0 and errors:
        raise errors[0]


def unjudged_concern(errors: dict[str, dict[str, Any]], pairs: list[tuple[str, str]] | None = None
                     ) -> CandidateUnjudged | None:
    """The concern naming the candidates (and pairs) whose judge calls failed on their input."""
    if not errors and not pairs:
        return None
    ids = list(dict.fromkeys([*errors, *(c for p in pairs or [] for c in p)]))
    first = next(iter(errors.values()), None)
    evidence = UnjudgedEvidence(errors={cid: ErrorEvidence(type=e["type"], message=e["message"])
                                        for cid, e in errors.items()}, pairs=list(pairs or []))
    what = []
    if errors:
        what.append(f"candidate(s) {', '.join(errors)}")
    if pairs:
        what.append(f"pair(s) {', '.join(f'{a}/{b}' for a, b in pairs)}")
    reason = f": {first['message']}" if first else ""
    return CandidateUnjudged(candidates=ids, evidence=evidence,
                             message=f"the judge's calls failed on the input of {' and '.join(what)}{reason}")
