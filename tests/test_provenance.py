"""The typed provenance and the shared call ledger: counting rules and a readable, lossless JSON."""

from __future__ import annotations

import json

import pytest

from oracle.results.concerns import DecisionRefusal, RefusalEvidence
from oracle.errors import ProviderHTTPError, ResponseParseError
from oracle.results.ledger import CallLedger
from oracle.providers.types import ChatReply, Provenance, Usage
from oracle.results.result import EvaluationResult, Status


def _reply(cost: float | None = 0.01, tokens: int | None = 5, attempts: int = 1, cached: bool = False) -> ChatReply:
    return ChatReply(text="x", usage=Usage(input_tokens=tokens, output_tokens=1), cost_usd=cost,
                     provenance=Provenance(endpoint_kind="openai_chat", base_url="http://h/v1", model_requested="m",
                                           model_answered="m-2024", attempts=attempts, cached=cached))


def test_requests_count_every_attempt_and_failed_call_but_not_cache_hits():
    ledger = CallLedger()
    ledger.add(_reply(attempts=3), source="verbalized")
    ledger.add(_reply(cached=True), source="verbalized")
    ledger.add_failure(ProviderHTTPError("500", attempts=4))
    assert ledger.requests == 3 + 0 + 4
    prov = ledger.provenance(mode="pointwise")
    assert prov.requests == 7 and [f.attempts for f in prov.failed_calls] == [4]
    assert prov.models_answered == ["m-2024"] and prov.model_requested == "m" and prov.endpoint_kinds == ["openai_chat"]


def test_cost_and_tokens_are_unknown_as_soon_as_one_is():
    ledger = CallLedger()
    ledger.add(_reply(cost=0.01, tokens=5), source="sampled")
    ledger.add(_reply(cost=0.02, tokens=7), source="sampled")
    assert ledger.cost_usd() == pytest.approx(0.03) and ledger.tokens().input == 12
    ledger.add(_reply(cost=None, tokens=None), source="sampled")
    assert ledger.cost_usd() is None and ledger.tokens().input is None and ledger.tokens().output == 3
    unreadable = CallLedger()
    unreadable.add(_reply(cost=0.01), source="verbalized")
    unreadable.add_failure(ResponseParseError("not JSON"))  # a 2xx that may be billed: price unknown
    assert unreadable.cost_usd() is None


def test_result_json_leaves_out_what_does_not_apply_and_round_trips():
    ledger = CallLedger()
    ledger.add(_reply(cost=None), source="native_decision", template_hash="abc")
    result = EvaluationResult(
        evaluator="decision_judge", status=Status.abstained, provenance=ledger.provenance(mode="questions"),
        concerns=[DecisionRefusal(candidates=["r1"], message="refused",
                                  evidence=RefusalEvidence(questions={"r1": ["team"]}, reasons=["policy"]))])
    data = json.loads(result.model_dump_json())
    prov = data["provenance"]
    assert "execution" not in prov and "decision_backend" not in prov and "logprobs_dropped" not in prov
    assert prov["cost_usd"] is None and prov["tokens"] == {"input": 5, "output": 1}  # unknown is a fact here
    assert prov["prompt_template_hash"] == "abc" and prov["calls"][0]["probability_source"] == "native_decision"
    assert data["concerns"][0] == {"kind": "decision_refusal", "candidates": ["r1"], "message": "refused",
                                   "evidence": {"questions": {"r1": ["team"]}, "reasons": ["policy"]}}
    assert EvaluationResult.model_validate(data) == result
    with pytest.raises(ValueError):
        EvaluationResult.model_validate({**data, "provenance": {**prov, "isolation_levle": "x"}})
