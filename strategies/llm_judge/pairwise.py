"""Pairwise judging: every pair asked in both orders, then a tournament over the verdicts.

Why both orders: judges prefer a seat (about 13 % of MT-Bench verdicts flip when the answers swap
places). A verdict that survives the swap is a preference for the content; one that does not is a
tie marked ``order_inconsistent`` and is reported, since it is evidence the judge cannot separate
the two. Which candidate sits in seat A first, and a tournament's first order, come from the seed
(strategies/_judging/placement.py), so a rerun asks the same requests in the same order.

Repeats (``repeats: k``) ask each order k times (each repeat's requests carry their index in the
cache salt and the sampling seed); the k verdicts of a pair are combined by ``aggregate``
(strategies/llm_judge/combine.py), and each repeat's own verdict is kept so the spread of win
rates over repeats (grader variance) is reported apart from the verdict. A panel's members judge
each pair the same way, each through its own client; their verdicts are combined by
``panel_aggregate``. The tournament then runs on the combined verdicts.
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
from oracle.strategies._judging.panel import Panel
from oracle.strategies._judging.placement import first_seat, seeded_order
from oracle.strategies.llm_judge.calls import CallLedger, Grader, ask, judge_request
from oracle.strategies.llm_judge.combine import combine_verdicts
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
    schedule: list[str] = field(default_factory=list)
    """The tournament's first order (seeded)."""
    member_orders: dict[str, list[tuple[OrderJudgement, OrderJudgement]]] = field(default_factory=dict)
    """A panel's orders by member (for each member's own position bias)."""


def _seat_source(reply: ChatReply) -> ProbabilitySource:
    """A seat readout from the reply's logprobs when it has one, else the written verdict."""
    return "logprob_readout" if seat_readout(reply.text, reply.logprobs).available else "verbalized"


async def judge_order(grader: Grader, ledger: CallLedger, task: Task, first: Trajectory, second: Trajectory,
                      repeat: int = 0) -> tuple[OrderJudgement, dict[str, Any]]:
    """One order of one pair: first in seat A, second in seat B."""
    items = rubric(task) if task.criteria else None
    req = judge_request(grader, pairwise_messages(task, first, second, items, grader.own_answer), PAIRWISE_SCHEMA,
                        repeat=repeat)
    asked = await ask(grader, ledger, req, parse_pairwise, source=_seat_source)
    evidence: dict[str, Any] = {"seat_a": first.id, "seat_b": second.id, **asked.evidence()}
    if asked.value is None:
        return OrderJudgement(first.id, second.id, None), evidence
    seat, rationale = asked.value
    readout = seat_readout(asked.reply.text, asked.reply.logprobs)
    evidence.update(winner_seat=seat, rationale=rationale, readout=readout.as_dict())
    p_first = readout.distribution["A"] if readout.available else None
    return OrderJudgement(first.id, second.id, seat, p_first), evidence


async def judge_pair(grader: Grader, ledger: CallLedger, task: Task, a: Trajectory, b: Trajectory
                     ) -> tuple[PairVerdict, list[tuple[OrderJudgement, OrderJudgement]]]:
    """One grader's verdict on (a, b): both orders, ``repeats`` times each, the seeded seat first."""
    cfg = grader.cfg
    seat_a_first = first_seat(cfg.seed, task, a.id, b.id)[0] == a.id

    async def one_repeat(i: int) -> tuple[PairVerdict, tuple[OrderJudgement, OrderJudgement]]:
        jobs = [judge_order(grader, ledger, task, a, b, i), judge_order(grader, ledger, task, b, a, i)]
        answers = await gather_or_cancel(*(jobs if seat_a_first else jobs[::-1]))
        (ab, ev_ab), (ba, ev_ba) = answers if seat_a_first else answers[::-1]
        evidence = {"orders": [ev_ab, ev_ba] if seat_a_first else [ev_ba, ev_ab]}
        return combine_orders(a.id, b.id, ab, ba, evidence=evidence), (ab, ba)

    repeats = await gather_or_cancel(*(one_repeat(i) for i in range(cfg.repeats)))
    verdict = combine_verdicts(a.id, b.id, [v for v, _ in repeats], cfg.aggregate, key="repeats")
    return verdict, [o for _, o in repeats]


async def run_pairwise(panel: Panel[Grader], ledger: CallLedger, task: Task, trajectories: list[Trajectory],
                       cfg: LLMJudgeConfig, *, raise_if_all_failed: bool = True) -> PairwiseRun:
    """Tournament over the candidates (all pairs up to ``all_pairs_max``, merge sort beyond), from
    the seeded first order. When every pair failed on its input, the first error is raised
    (``raise_if_all_failed``), or the run is returned with every pair ``failed`` (a cascade then
    keeps its pointwise order)."""
    by_id = {t.id: t for t in trajectories}
    orders: list[tuple[OrderJudgement, OrderJudgement]] = []
    member_orders: dict[str, list[tuple[OrderJudgement, OrderJudgement]]] = {}
    readouts = 0
    errors: list[BaseException] = []

    async def judged(a: str, b: str) -> PairVerdict:
        nonlocal readouts
        answers = await panel.each(lambda g: judge_pair(g, ledger, task, by_id[a], by_id[b]))
        for label, (_, mine) in answers.items():
            orders.extend(mine)
            if label is not None:
                member_orders.setdefault(label, []).extend(mine)
            readouts += sum(1 for pair in mine for j in pair if j.p_first is not None)
        if panel.single:
            return next(iter(answers.values()))[0]
        verdicts = {str(label): v for label, (v, _) in answers.items()}
        combined = combine_verdicts(a, b, list(verdicts.values()), cfg.panel_aggregate, key="members")
        members = dict(zip(verdicts, combined.evidence.get("members", [])))
        return PairVerdict(a=combined.a, b=combined.b, winner=combined.winner, p_a=combined.p_a,
                           order_inconsistent=combined.order_inconsistent, unparsed=combined.unparsed,
                           evidence={**{k: v for k, v in combined.evidence.items() if k != "members"},
                                     "members": members})

    position = {t.id: i for i, t in enumerate(trajectories)}

    async def compare(a: str, b: str) -> PairVerdict:
        """All orders; a call that fails on the pair's input leaves this pair out (recorded as
        ``failed`` with the error), and the tournament goes on with the other pairs. The pair is
        named in input order whatever the schedule (the seats come from the seed)."""
        a, b = sorted((a, b), key=position.__getitem__)
        return await contain(lambda: judged(a, b), lambda exc: PairVerdict(
            a=a, b=b, winner=None, p_a=0.5, failed=True, evidence={"error": error_info(exc)}), errors)

    ids = [t.id for t in trajectories]
    schedule = seeded_order(cfg.seed, task, ids)
    ranking, verdicts = await tournament(ids, compare, all_pairs_max=cfg.all_pairs_max, schedule=schedule)
    if raise_if_all_failed:
        raise_if_nothing_judged(sum(1 for v in verdicts if not v.failed), errors)
    return PairwiseRun(ranking, verdicts, orders, readouts, errors, schedule, member_orders)
