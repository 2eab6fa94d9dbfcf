"""How a cost is known and how it prints: one rule for ``evaluate``, ``resume``, batch summaries and
comparisons.

Three cases, never mixed up: an evaluation that made no model request (a sandbox run, a reference
check) cost nothing, and says so (``$0 (no model call)``, not ``$0.000000`` as if a model had been
priced at zero; ``$0 (no model answered)`` when every request failed); one that made requests at a
price nobody configured is ``unknown``, never 0; the rest print in dollars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle.results.result import EvaluationResult

NO_MODEL_CALL = "$0 (no model call)"
NO_MODEL_ANSWER = "$0 (no model answered)"
UNKNOWN = "unknown"


def made_no_model_call(result: EvaluationResult) -> bool:
    """No request reached (or was tried against) a model endpoint."""
    prov = result.provenance
    return prov.requests == 0 and not prov.calls and not prov.failed_calls


def nothing_answered(result: EvaluationResult) -> bool:
    """Requests were tried but none was answered (a refused connection, every call failed)."""
    prov = result.provenance
    return not prov.calls and bool(prov.requests or prov.failed_calls)


def result_cost_text(result: EvaluationResult) -> str:
    """A result's cost as tables print it."""
    if made_no_model_call(result):
        return NO_MODEL_CALL
    if nothing_answered(result) and not result.cost_usd:
        return NO_MODEL_ANSWER
    return cost_text(result.cost_usd, model_calls=None)


def model_cost(result: EvaluationResult | None) -> float | None:
    """The evaluation's model cost: as recorded; 0.0 when it made no model request (known to be
    nothing); None when calls were made at an unknown price (or there is no result)."""
    if result is None:
        return None
    if result.cost_usd is not None:
        return result.cost_usd
    return 0.0 if made_no_model_call(result) else None


def cost_text(usd: float | None, *, model_calls: int | None, digits: int = 6) -> str:
    """``$0 (no model call)`` when ``model_calls`` is 0, ``unknown`` for no figure, else dollars."""
    if model_calls == 0:
        return NO_MODEL_CALL
    return UNKNOWN if usd is None else f"${usd:.{digits}f}"
