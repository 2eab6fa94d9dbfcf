"""One endpoint's backend for the decision judge: which client, and how its answers are read.

Written once for the judge's own endpoint and for each panel member, so a member on a chat
endpoint is read exactly as the judge's chat endpoint is (readout with its sampling fallbacks, or
sampling), and a member on a decision endpoint exactly as ``providers.decision`` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from oracle.config.model import DecisionJudgeConfig, Price, ProviderSettings
from oracle.results.ledger import CallLedger
from oracle.strategies.decision_judge.backends import (DEFAULT_TOP_LOGPROBS, BackendKind, CallTag,
                                                       LogprobReadoutBackend, NativeBackend, SampledBackend)

if TYPE_CHECKING:
    from oracle.providers.pool import ProviderPool


def build_backend(kind: BackendKind, endpoint: ProviderSettings, *, pool: ProviderPool,
                  prices: Mapping[str, Price], judge: DecisionJudgeConfig, ledger: CallLedger,
                  tag: CallTag = CallTag(), temperature: float | None = None) -> Any:
    """The backend that asks ``endpoint``; ``temperature`` over ``judge.sample_temperature`` for sampling.

    The clients come from the pool (one per endpoint and model), shared with any other evaluator
    talking to it; the pool's owner closes them."""
    timeout = judge.timeout_s
    model = endpoint.model or ""
    if kind == "native":
        client = pool.decision(endpoint, prices)
        return NativeBackend(client.decide, model=model, ledger=ledger, timeout_s=timeout, tag=tag)
    chat = pool.chat(endpoint, prices)
    sampler = SampledBackend(chat.complete, samples=judge.samples,
                             temperature=judge.sample_temperature if temperature is None else temperature,
                             model=model, ledger=ledger, timeout_s=timeout, tag=tag)
    if kind == "logprob_readout":
        # Sampling answers where the endpoint ignores logprobs, and below the floor if configured.
        top = chat.capabilities.max_top_logprobs or DEFAULT_TOP_LOGPROBS
        return LogprobReadoutBackend(chat.complete, top_logprobs=top, sampler=sampler,
                                     fallback=sampler if judge.low_coverage == "sample" else None,
                                     logprobs_available=lambda: bool(chat.capabilities.logprobs),
                                     coverage_floor=judge.coverage_floor, model=model,
                                     ledger=ledger, timeout_s=timeout, tag=tag)
    return sampler


__all__ = ["build_backend"]
