"""Ranking candidates from pairwise verdicts: schedule, preference graph, cycles, final order.

Pure code, no model calls: the LLM judge hands in an async ``compare(a, b)`` that asks the model in
both orders and returns a ``PairVerdict``; this module decides which pairs to ask about and turns the
answers into an order.

Why these choices:

- Up to ``all_pairs_max`` candidates every pair is judged (n*(n-1)/2 pairs, two calls each). Beyond
  that a merge sort decides which pairs to judge. Merge sort needs at most
  ``n*ceil(log2 n) - 2**ceil(log2 n) + 1`` comparisons, so the judgements (both orders counted)
  stay below ``2 * n * log2(n)``; a Swiss system would need fewer calls but gives a coarser order.
- The preference graph is a networkx DiGraph with an edge winner -> loser whose weight is the
  preference probability of the winner. Ties (both orders disagreeing, or a 0.5 probability) are not
  edges; they are kept in ``graph.graph["ties"]``. Cycles among decided edges are real evidence
  that the judge is inconsistent, so they are reported rather than silently broken.
- Copeland score = wins - losses. A pair that was judged counts by its verdict; a pair that was not
  judged (sparse tournaments) counts by the order the judged edges imply, when exactly one direction
  is reachable. On a complete graph this is plain Copeland. Bradley-Terry strengths (MM algorithm,
  numpy, a small symmetric prior so undefeated candidates stay finite) break Copeland ties; equal
  strengths fall back to input order, so the result is deterministic.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine, Sequence

import networkx as nx
import numpy as np

from oracle.strategies._judging.gather import gather_or_cancel


@dataclass(frozen=True)
class PairVerdict:
    """A pair judged in both orders: who won (None for a tie) and the preference probability."""

    a: str
    b: str
    winner: str | None
    p_a: float
    """Probability that ``a`` is preferred over ``b`` (0.5 for a tie)."""
    order_inconsistent: bool = False
    """The two orders named different winners; the pair counts as a tie."""
    unparsed: bool = False
    """At least one order gave no readable verdict; the pair is left out of the graph."""
    failed: bool = False
    """A call of this pair failed on the candidates' input (strategies/_judging/faults.py); the pair
    is left out of the graph like an unparsed one, and the candidates' other pairs still count."""
    evidence: dict = field(default_factory=dict, compare=False)
    """Per-order judgements, raw texts, parse status (filled by the judge)."""

    def __post_init__(self) -> None:
        if self.winner not in (None, self.a, self.b):
            raise ValueError(f"winner: {self.winner!r} is neither {self.a!r} nor {self.b!r}")
        if not 0.0 <= self.p_a <= 1.0:
            raise ValueError(f"p_a: {self.p_a} outside 0..1")

    @property
    def counted(self) -> bool:
        """Whether the verdict enters the graph: it was read, and its calls did not fail."""
        return not (self.unparsed or self.failed)

    @property
    def loser(self) -> str | None:
        if self.winner is None:
            return None
        return self.b if self.winner == self.a else self.a


Compare = Callable[[str, str], Coroutine[Any, Any, PairVerdict]]


@dataclass(frozen=True)
class OrderJudgement:
    """One order of one pair: which seat won ("A" = shown first) and P(first seat wins)."""

    first: str
    second: str
    seat: str | None
    """Seat A (shown first), seat B, or None when the reply could not be read."""
    p_first: float | None = None
    """P(first seat wins): a logprob readout when available, else 1.0 / 0.0 from the verdict."""


def combine_orders(a: str, b: str, ab: OrderJudgement, ba: OrderJudgement,
                   evidence: dict | None = None) -> PairVerdict:
    """Merge the two orders of a pair into one verdict.

    Agreement: the winner, with preference probability = mean over both orders of P(it wins).
    Disagreement: a tie marked ``order_inconsistent`` (p_a = 0.5), because a verdict that follows the
    seat rather than the content says nothing about the content. A missing order: ``unparsed``.
    """
    if (ab.first, ab.second, ba.first, ba.second) != (a, b, b, a):
        raise ValueError("combine_orders: judgements must be (a first, then b first)")
    evidence = dict(evidence or {})
    if ab.seat is None or ba.seat is None:
        return PairVerdict(a=a, b=b, winner=None, p_a=0.5, unparsed=True, evidence=evidence)
    pa_1 = ab.p_first if ab.p_first is not None else (1.0 if ab.seat == "A" else 0.0)
    pa_2 = 1.0 - (ba.p_first if ba.p_first is not None else (1.0 if ba.seat == "A" else 0.0))
    winner_1 = a if ab.seat == "A" else b
    winner_2 = b if ba.seat == "A" else a
    evidence["p_a_by_order"] = [pa_1, pa_2]
    if winner_1 != winner_2:
        return PairVerdict(a=a, b=b, winner=None, p_a=0.5, order_inconsistent=True, evidence=evidence)
    p_a = min(1.0, max(0.0, (pa_1 + pa_2) / 2))
    return PairVerdict(a=a, b=b, winner=winner_1, p_a=p_a, evidence=evidence)


def position_bias(judgements: Sequence[tuple[OrderJudgement, OrderJudgement]]) -> dict[str, float | int | None]:
    """Per-run position statistics over pairs judged in both orders.

    ``flip_rate``: share of fully read pairs whose winner changed with the seats.
    ``first_seat_win_rate``: share of read single-order verdicts that chose the first seat (0.5 = no
    seat preference). Rates are None when nothing was read, never a made-up 0.5.
    """
    read = [(x, y) for x, y in judgements if x.seat is not None and y.seat is not None]
    seats = [j.seat for pair in judgements for j in pair if j.seat is not None]
    flips = sum(1 for x, y in read if x.seat == y.seat)  # same seat both times = different winner
    return {
        "pairs": len(judgements),
        "pairs_read_both_orders": len(read),
        "order_flips": flips,
        "flip_rate": flips / len(read) if read else None,
        "first_seat_wins": seats.count("A"),
        "verdicts_read": len(seats),
        "first_seat_win_rate": seats.count("A") / len(seats) if seats else None,
    }


@dataclass(frozen=True)
class Ranking:
    """The final order and the evidence behind it."""

    order: list[str]
    copeland: dict[str, float]
    bradley_terry: dict[str, float]
    """Log-strengths (geometric mean 1 -> mean 0)."""
    cycles: list[list[str]]
    tied_groups: list[list[str]]
    """Groups that Copeland could not separate (Bradley-Terry ordered them)."""
    scheme: str
    """Which schedule chose the pairs: all_pairs or merge_sort."""
    pairs_judged: int

    @property
    def judgements(self) -> int:
        """Pairwise judgements spent, both orders counted."""
        return 2 * self.pairs_judged


# ---------------------------------------------------------------- scheduling


def all_pairs_judgements(n: int) -> int:
    """Judgements a full round robin needs, both orders counted."""
    return n * (n - 1)


def merge_sort_max_comparisons(n: int) -> int:
    """Worst-case comparisons of a bottom-up merge sort over ``n`` items."""
    if n < 2:
        return 0
    k = math.ceil(math.log2(n))
    return n * k - 2 ** k + 1


def judgement_budget(n: int) -> float:
    """The ceiling the issue sets for n candidates: 2 * n * log2(n) judgements."""
    return 2 * n * math.log2(n) if n > 1 else 0.0


async def run_tournament(ids: Sequence[str], compare: Compare, *, all_pairs_max: int) -> list[PairVerdict]:
    """Judge the pairs a tournament over ``ids`` needs; each pair at most once.

    All pairs run concurrently when ``len(ids) <= all_pairs_max``; otherwise a merge sort runs the
    merges of one level concurrently (the comparisons inside one merge depend on each other).
    """
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise ValueError("ids: duplicate candidate ids")
    if len(ids) < 2:
        return []
    if len(ids) <= all_pairs_max:
        return list(await gather_or_cancel(*(compare(a, b) for a, b in itertools.combinations(ids, 2))))
    return await merge_sort_tournament(ids, compare)


async def merge_sort_tournament(ids: Sequence[str], compare: Compare) -> list[PairVerdict]:
    """Bottom-up merge sort driven by pairwise verdicts; a tie keeps the left element first."""
    verdicts: dict[frozenset[str], PairVerdict] = {}

    async def judged(a: str, b: str) -> PairVerdict:
        key = frozenset((a, b))
        if key not in verdicts:
            verdicts[key] = await compare(a, b)
        return verdicts[key]

    async def merge(left: list[str], right: list[str]) -> list[str]:
        out: list[str] = []
        i = j = 0
        while i < len(left) and j < len(right):
            verdict = await judged(left[i], right[j])
            if verdict.winner == right[j]:
                out.append(right[j])
                j += 1
            else:  # left won, or a tie: stable, left first
                out.append(left[i])
                i += 1
        return out + left[i:] + right[j:]

    runs: list[list[str]] = [[x] for x in ids]
    while len(runs) > 1:
        pairs = [(runs[k], runs[k + 1]) for k in range(0, len(runs) - 1, 2)]
        merged = list(await gather_or_cancel(*(merge(left, right) for left, right in pairs)))
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return list(verdicts.values())


# ---------------------------------------------------------------- graph and order


def preference_graph(ids: Sequence[str], verdicts: Sequence[PairVerdict]) -> nx.DiGraph:
    """Nodes = candidates; edge winner -> loser with ``weight`` = the winner's preference probability."""
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    ties: list[tuple[str, str, bool]] = []
    for v in verdicts:
        for node in (v.a, v.b):
            if node not in g:
                raise ValueError(f"verdicts: unknown candidate id {node!r}")
        if not v.counted:
            continue
        if v.winner is None:
            ties.append((v.a, v.b, v.order_inconsistent))
        else:
            p = v.p_a if v.winner == v.a else 1.0 - v.p_a
            g.add_edge(v.winner, v.loser, weight=p)
    g.graph["ties"] = ties
    return g


def find_cycles(g: nx.DiGraph, *, limit: int = 20) -> list[list[str]]:
    """Preference cycles among decided edges, each rotated to start at its smallest id, sorted."""
    found: list[list[str]] = []
    for cycle in nx.simple_cycles(g):
        k = cycle.index(min(cycle))
        found.append(cycle[k:] + cycle[:k])
        if len(found) >= limit:
            break
    return sorted(found, key=lambda c: (len(c), c))


def copeland_scores(g: nx.DiGraph) -> dict[str, float]:
    """Wins minus losses; judged pairs by their edge, unjudged pairs by one-way reachability."""
    reach = nx.transitive_closure(g, reflexive=False)
    judged = {frozenset(e) for e in g.edges} | {frozenset(t[:2]) for t in g.graph.get("ties", [])}
    score = {n: 0.0 for n in g.nodes}
    for a, b in itertools.combinations(list(g.nodes), 2):
        if frozenset((a, b)) in judged:
            a_wins, b_wins = g.has_edge(a, b), g.has_edge(b, a)
        else:
            a_wins, b_wins = reach.has_edge(a, b), reach.has_edge(b, a)
        if a_wins and not b_wins:
            score[a] += 1
            score[b] -= 1
        elif b_wins and not a_wins:
            score[b] += 1
            score[a] -= 1
    return score


def bradley_terry(ids: Sequence[str], verdicts: Sequence[PairVerdict], *, prior: float = 0.1,
                  max_iter: int = 2000, tol: float = 1e-10) -> dict[str, float]:
    """Bradley-Terry log-strengths by Hunter's MM updates.

    Each judged pair adds ``p_a`` wins to a and ``1 - p_a`` to b (a tie adds 0.5 each). ``prior``
    pseudo-wins on every pair in both directions keep undefeated candidates finite and connect
    components that were never compared.
    """
    ids = list(ids)
    index = {x: i for i, x in enumerate(ids)}
    n = len(ids)
    if n == 0:
        return {}
    wins = np.full((n, n), prior, dtype=float)
    np.fill_diagonal(wins, 0.0)
    for v in verdicts:
        if not v.counted:
            continue
        i, j = index[v.a], index[v.b]
        wins[i, j] += v.p_a
        wins[j, i] += 1.0 - v.p_a
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    p = np.ones(n)
    for _ in range(max_iter):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = total_wins / denom
        new /= np.exp(np.mean(np.log(new)))
        if np.max(np.abs(new - p)) < tol:
            p = new
            break
        p = new
    return {x: float(np.log(p[index[x]])) for x in ids}


def rank(ids: Sequence[str], verdicts: Sequence[PairVerdict], *, scheme: str) -> Ranking:
    """Order candidates by Copeland, then Bradley-Terry, then input order."""
    ids = list(ids)
    g = preference_graph(ids, verdicts)
    cope = copeland_scores(g)
    bt = bradley_terry(ids, verdicts)
    position = {x: i for i, x in enumerate(ids)}
    order = sorted(ids, key=lambda x: (-cope[x], -round(bt[x], 9), position[x]))
    groups = [list(grp) for _, grp in itertools.groupby(order, key=lambda x: cope[x])]
    return Ranking(order=order, copeland=cope, bradley_terry=bt, cycles=find_cycles(g),
                   tied_groups=[grp for grp in groups if len(grp) > 1],
                   scheme=scheme,
                   pairs_judged=len(verdicts))


def normalized_copeland(copeland: dict[str, float]) -> dict[str, float]:
    """Copeland mapped to 0..1: (score + (n-1)) / (2(n-1)); equal Copeland gives equal score."""
    n = len(copeland)
    if n < 2:
        return {k: 1.0 for k in copeland}
    return {k: (v + (n - 1)) / (2 * (n - 1)) for k, v in copeland.items()}


async def tournament(ids: Sequence[str], compare: Compare, *, all_pairs_max: int,
                     schedule: Sequence[str] | None = None) -> tuple[Ranking, list[PairVerdict]]:
    """Run the tournament and rank: the one entry point the judge needs. ``schedule`` (the same ids,
    seeded) is the order pairs are asked in and a merge sort starts from; ties in the final order
    still fall back to the order of ``ids``."""
    if schedule is not None and sorted(schedule) != sorted(ids):
        raise ValueError("schedule: must hold exactly the candidate ids")
    verdicts = await run_tournament(list(schedule) if schedule is not None else ids, compare,
                                    all_pairs_max=all_pairs_max)
    scheme = "all_pairs" if len(ids) <= all_pairs_max else "merge_sort"
    return rank(ids, verdicts, scheme=scheme), verdicts
