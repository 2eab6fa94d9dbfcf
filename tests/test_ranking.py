"""Tournament scheduling, preference graph, cycles, Copeland + Bradley-Terry (pure, no model)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from oracle.strategies.llm_judge.ranking import (
    PairVerdict,
    all_pairs_judgements,
    bradley_terry,
    copeland_scores,
    find_cycles,
    judgement_budget,
    merge_sort_max_comparisons,
    preference_graph,
    rank,
    tournament,
)


def verdict(a: str, b: str, winner: str | None, p: float | None = None, inconsistent: bool = False):
    if p is None:
        p = 0.5 if winner is None else (0.9 if winner == a else 0.1)
    return PairVerdict(a=a, b=b, winner=winner, p_a=p, order_inconsistent=inconsistent)


class Oracle:
    """A comparator from hidden strengths: the stronger one wins; records every pair asked."""

    def __init__(self, strengths: dict[str, float], tie_pairs: set[frozenset[str]] = frozenset()):
        self.strengths = strengths
        self.tie_pairs = tie_pairs
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, a: str, b: str) -> PairVerdict:
        self.asked.append((a, b))
        if frozenset((a, b)) in self.tie_pairs:
            return verdict(a, b, None, inconsistent=True)
        winner = a if self.strengths[a] > self.strengths[b] else b
        return verdict(a, b, winner)


@pytest.mark.parametrize("n", [2, 3, 4])
async def test_all_pairs_up_to_the_limit(n):
    ids = [f"c{i}" for i in range(n)]
    judge = Oracle({x: float(i) for i, x in enumerate(ids)})
    ranking, verdicts = await tournament(ids, judge, all_pairs_max=4)
    assert ranking.scheme == "all_pairs"
    assert {frozenset(p) for p in judge.asked} == {frozenset(p) for p in itertools.combinations(ids, 2)}
    assert len(judge.asked) == n * (n - 1) // 2
    assert ranking.order == list(reversed(ids))
    assert ranking.judgements == all_pairs_judgements(n)


@pytest.mark.parametrize("n", [5, 8, 13, 16, 32, 50])
async def test_merge_sort_beyond_limit_stays_below_budget_and_sorts(n):
    rng = random.Random(n)
    ids = [f"c{i}" for i in range(n)]
    strengths = {x: rng.random() for x in ids}
    judge = Oracle(strengths)
    ranking, verdicts = await tournament(ids, judge, all_pairs_max=4)
    assert ranking.scheme == "merge_sort"
    asked = [frozenset(p) for p in judge.asked]
    assert len(asked) == len(set(asked)), "a pair was judged twice"
    assert len(asked) <= merge_sort_max_comparisons(n)
    assert 2 * len(asked) < judgement_budget(n)
    assert 2 * len(asked) < all_pairs_judgements(n)
    assert ranking.order == sorted(ids, key=lambda x: -strengths[x])
    assert ranking.cycles == []


def test_budget_formula_holds_for_every_n_up_to_200():
    for n in range(5, 201):
        assert 2 * merge_sort_max_comparisons(n) < judgement_budget(n), n
    for n in range(2, 5):
        assert all_pairs_judgements(n) < judgement_budget(n), n


def test_three_cycle_is_reported_and_copeland_ties_broken_by_bt():
    ids = ["a", "b", "c"]
    vs = [verdict("a", "b", "a", 0.9), verdict("b", "c", "b", 0.6), verdict("a", "c", "c", 0.4)]
    r = rank(ids, vs, scheme="all_pairs")
    assert r.cycles == [["a", "b", "c"]]
    assert r.copeland == {"a": 0, "b": 0, "c": 0}
    assert r.tied_groups == [r.order]
    # a beat b by 0.9 and lost to c only by 0.6: strongest; b lost 0.9 to a: weakest
    assert r.order == ["a", "c", "b"]
    assert r.bradley_terry["a"] > r.bradley_terry["c"] > r.bradley_terry["b"]


def test_cycle_detection_on_larger_graph():
    g = preference_graph(list("abcde"), [
        verdict("a", "b", "a"), verdict("b", "c", "b"), verdict("c", "a", "c"),
        verdict("c", "d", "c"), verdict("d", "e", "d"), verdict("e", "c", "e"),
    ])
    assert find_cycles(g) == [["a", "b", "c"], ["c", "d", "e"]]


def test_ties_are_not_edges_and_count_zero():
    ids = ["x", "y", "z"]
    vs = [verdict("x", "y", None, inconsistent=True), verdict("x", "z", "x"), verdict("y", "z", "y")]
    g = preference_graph(ids, vs)
    assert not g.has_edge("x", "y") and not g.has_edge("y", "x")
    assert g.graph["ties"] == [("x", "y", True)]
    assert copeland_scores(g) == {"x": 1, "y": 1, "z": -2}
    r = rank(ids, vs, scheme="all_pairs")
    assert r.tied_groups == [["x", "y"]]
    assert r.order[-1] == "z"


def test_unjudged_pairs_count_by_implied_order():
    ids = ["a", "b", "c"]
    g = preference_graph(ids, [verdict("a", "b", "a"), verdict("b", "c", "b")])
    assert copeland_scores(g) == {"a": 2, "b": 0, "c": -2}


def test_bradley_terry_recovers_strength_order_and_is_finite_for_undefeated():
    ids = ["s", "m", "w"]
    vs = [verdict("s", "m", "s", 1.0), verdict("s", "w", "s", 1.0), verdict("m", "w", "m", 0.7)]
    bt = bradley_terry(ids, vs)
    assert all(math.isfinite(v) for v in bt.values())
    assert bt["s"] > bt["m"] > bt["w"]
    assert abs(sum(bt.values())) < 1e-9


def test_bradley_terry_symmetric_data_gives_equal_strengths():
    ids = ["a", "b"]
    bt = bradley_terry(ids, [verdict("a", "b", None, 0.5)])
    assert bt["a"] == pytest.approx(bt["b"])


async def test_merge_sort_ties_keep_left_first_deterministically():
    ids = [f"c{i}" for i in range(6)]
    judge = Oracle({x: 1.0 for x in ids}, tie_pairs={frozenset(p) for p in itertools.combinations(ids, 2)})
    r1, _ = await tournament(ids, judge, all_pairs_max=4)
    r2, _ = await tournament(ids, Oracle({x: 1.0 for x in ids},
                                          tie_pairs={frozenset(p) for p in itertools.combinations(ids, 2)}),
                             all_pairs_max=4)
    assert r1.order == r2.order == ids


def test_verdict_validation():
    with pytest.raises(ValueError, match="winner"):
        PairVerdict(a="a", b="b", winner="c", p_a=0.5)
    with pytest.raises(ValueError, match="p_a"):
        PairVerdict(a="a", b="b", winner="a", p_a=1.5)
    with pytest.raises(ValueError, match="unknown candidate"):
        preference_graph(["a"], [verdict("a", "b", "a")])


async def test_duplicate_ids_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        await tournament(["a", "a"], Oracle({"a": 1}), all_pairs_max=4)


def test_combine_orders_agreement_disagreement_and_unparsed():
    from oracle.strategies.llm_judge.ranking import OrderJudgement, combine_orders, position_bias

    ab = OrderJudgement("x", "y", "A", 0.8)
    ba = OrderJudgement("y", "x", "B", 0.4)  # x in seat B wins with p 0.6
    v = combine_orders("x", "y", ab, ba)
    assert v.winner == "x" and v.p_a == pytest.approx(0.7) and not v.order_inconsistent
    flip = combine_orders("x", "y", OrderJudgement("x", "y", "A"), OrderJudgement("y", "x", "A"))
    assert flip.winner is None and flip.order_inconsistent and flip.p_a == 0.5
    broken = combine_orders("x", "y", OrderJudgement("x", "y", None), OrderJudgement("y", "x", "A"))
    assert broken.unparsed and broken.winner is None
    assert not preference_graph(["x", "y"], [broken]).graph["ties"]
    with pytest.raises(ValueError):
        combine_orders("x", "y", ab, ab)
    stats = position_bias([(ab, ba), (OrderJudgement("x", "y", "A"), OrderJudgement("y", "x", "A")),
                           (OrderJudgement("x", "y", None), OrderJudgement("y", "x", "A"))])
    assert stats["pairs"] == 3 and stats["pairs_read_both_orders"] == 2
    assert stats["order_flips"] == 1 and stats["flip_rate"] == 0.5
    assert stats["first_seat_wins"] == 4 and stats["verdicts_read"] == 5
    assert position_bias([])["flip_rate"] is None
