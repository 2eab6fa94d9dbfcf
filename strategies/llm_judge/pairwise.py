"""Pairwise judging: every pair asked in both orders, then a tournament over the verdicts.

Why both orders: judges prefer a seat (about 13 % of MT-Bench verdicts flip when the answers swap
places). A verdict that survives the swap is a preference for the content; one that does not is a
tie marked ``order_inconsistent`` and is reported, since it is evidence the judge cannot separate
the two. Repeats do not apply here: the swap already doubles the calls, and the tournament keeps
the total below 2*n*log2(n) judgements only if each pair costs two calls (repair requests aside).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle.config.model import LLMJudgeConfig
from oracle.results.provenance import ProbabilitySource
from oracle.providers.types import ChatReply
from oracle.tasks.task import Task, Trajectory

from oracle.strategies._judging.faults import contain, error_info, raise_if_nothing_judged
from oracle.strategies._judging.gather import gather_or_cancel
from oracle.strategies.llm_judge.calls import ChatCompleter, CallLedger, ask, chat_request
from oracle.strategies.llm_judge.parse import parse_pairwise, seat_readout
from oracle.strategies.llm_judge.prompts import PAIRWISE_SCHEMA, pairwise_messages, rubric
from oracle.strategies.llm_judge.ranking import OrderJudgement, PairVerdict, Ranking, combine_orders, tournament


@dataclass
class PairwiseRun:
    """Everything one tournament produced."""

    ranking: Ranking
    verdicts: list[PairVerdict]
    orders: list[tuple[OrderJudgement, OrderJudgement]] = field(default_factory=list)
    readouts_used: int = 0
    errors: list[BaseException] = field(default_factory=list)
    """The candidate-caused failures of pairs recorded as ``failed`` (strategies/_judging/faults.py)."""


def _seat_source(reply: ChatReply) -> ProbabilitySource:
    """A seat readout from the reply's logprobs when it has one, else the written verdict."""
    return "logprob_readout" if seat_readout(reply.text, reply.logprobs).available else "verbalized"


async def judge_order(client: ChatCompleter, ledger: CallLedger, task: Task, first: Trajectory, second: Trajectory,
                      cfg: LLMJudgeConfig) -> tuple[OrderJudgement, dict[str, Any]]:
    """One order of one pair: first in seat A, second in seat B."""
    items = rubric(task) if task.criteria else None
    req = chat_request(pairwise_messages(task, first, second, items), schema=PAIRWISE_SCHEMA,
                       capabilities=client.capabilities, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                       logprobs=cfg.logprobs, top_logprobs=cfg.top_logprobs)
    asked = await ask(client, ledger, req, parse_pairwise, source=_seat_source)
    evidence: dict[str, Any] = {"seat_a": first.id, "seat_b": second.id, **asked.evidence()}
    if asked.value is None:
        return OrderJudgement(first.id, second.id, None), evidence
    seat, rationale = asked.value
    readout = seat_readout(asked.reply.text, asked.reply.logprobs)
    evidence.update(winner_seat=seat, rationale=rationale, readout=readout.as_dict())
    p_first = readout.distribution["A"] if readout.available else None
    return OrderJudgement(first.id, second.id, seat, p_first), evidence


async def run_pairwise(client: ChatCompleter, ledger: CallLedger, task: Task, trajectories: list[Trajectory],
                       cfg: LLMJudgeConfig, *, raise_if_all_failed: bool = True) -> PairwiseRun:
    """Tournament over the candidates (all pairs up to ``all_pairs_max``, merge sort beyond). When
    every pair failed on its input, the first error is raised (``raise_if_all_failed``), or the run
    is returned with every pair ``failed`` (a cascade then keeps its pointwise order)."""
    by_id = {t.id: t for t in trajectories}
    orders: list[tuple[OrderJudgement, OrderJudgement]] = []
    readouts = 0

    errors: list[BaseException] = []

    async def both_orders(a: str, b: str) -> PairVerdict:
        nonlocal readouts
        (ab, ev_ab), (ba, ev_ba) = await gather_or_cancel(
            judge_order(client, ledger, task, by_id[a], by_id[b], cfg),
            judge_order(client, ledger, task, by_id[b], by_id[a], cfg))
        orders.append((ab, ba))
        readouts += sum(1 for j in (ab, ba) if j.p_first is not None)
        return combine_orders(a, b, ab, ba, evidence={"orders": [ev_ab, ev_ba]})

    async def compare(a: str, b: str) -> PairVerdict:
        """Both orders; a call that fails on the pair's input leaves this pair out (recorded as
        ``failed`` with the error), and the tournament goes on with the other pairs."""
        return await contain(lambda: both_orders(a, b), lambda exc: PairVerdict(
            a=a, b=b, winner=None, p_a=0.5, failed=True, evidence={"error": error_info(exc)}), errors)

    ranking, verdicts = await tournament([t.id for t in trajectories], compare, all_pairs_max=cfg.all_pairs_max)
    if raise_if_all_failed:
        raise_if_nothing_judged(sum(1 for v in verdicts if not v.failed), errors)
    return PairwiseRun(ranking, verdicts, orders, readouts, errors)
